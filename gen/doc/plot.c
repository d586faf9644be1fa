/* plot.c — SVG line plots and the column table (see plot.h). */
#define _POSIX_C_SOURCE 200809L
#include "doc/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Canvas in SVG user units; the legend sits right of the plot area so
 * that it never hides data. */
enum { WIDTH = 760, HEIGHT = 460, LEFT = 78, BOTTOM = 52, TOP_PLAIN = 18,
       TOP_TITLE = 40, LEGEND_GAP = 16, LEGEND_ROW = 18 };

/* Tableau 10: distinct under the common colour-vision deficiencies. */
static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

typedef struct {
    double lo, hi;   /* data range shown */
    double px0, px1; /* pixel positions of lo and hi */
} axis;

static double to_px(const axis *a, double v)
{
    return a->px0 + (v - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

static void put_escaped(ch_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': ch_buf_put(b, "&amp;"); break;
        case '<': ch_buf_put(b, "&lt;"); break;
        case '>': ch_buf_put(b, "&gt;"); break;
        case '"': ch_buf_put(b, "&quot;"); break;
        case '\'': ch_buf_put(b, "&apos;"); break;
        default:
            /* Control bytes are not allowed in XML 1.0. */
            if ((unsigned char)*s >= 0x20 || *s == '\t') ch_buf_putc(b, *s);
        }
    }
}

/* 1, 2 or 5 times a power of ten, near raw. */
static double nice_step(double raw)
{
    double e = floor(log10(raw)), f = raw / pow(10, e);
    double nf = f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10;
    return nf * pow(10, e);
}

/* Range of the finite data over all series (0 when there is none). */
static int data_range(size_t ns, const ch_plot_series *s, int y, double *lo,
                      double *hi)
{
    int any = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < s[i].n; j++) {
            double v = y ? s[i].y[j] : s[i].x[j];
            double w = y ? s[i].x[j] : s[i].y[j];
            if (!isfinite(v) || !isfinite(w)) continue;
            *lo = fmin(*lo, v), *hi = fmax(*hi, v);
            any = 1;
        }
    return any;
}

/* Pads a range by 4 % on each side. A range below 1e-9 of the values
 * (a conserved quantity, round-off) is shown as constant in a window of
 * 10 % (or 1 about 0): tick labels could not tell its values apart. */
static void pad_range(double *lo, double *hi)
{
    double w = *hi - *lo, mid = 0.5 * (*lo + *hi);
    if (!(w > 1e-9 * fmax(fabs(*lo), fabs(*hi)))) {
        double h = fabs(mid) > 0 ? 0.1 * fabs(mid) : 1.0;
        *lo = mid - h, *hi = mid + h;
        return;
    }
    *lo -= 0.04 * w, *hi += 0.04 * w;
}

/* One scale for both axes: the axis with fewer units per pixel is
 * widened about its centre to the other's ratio, so nothing is cut off. */
static void equalize(axis *ax, axis *ay)
{
    double ux = (ax->hi - ax->lo) / fabs(ax->px1 - ax->px0);
    double uy = (ay->hi - ay->lo) / fabs(ay->px1 - ay->px0);
    axis *a = ux < uy ? ax : ay;
    double u = fmax(ux, uy), mid = 0.5 * (a->lo + a->hi);
    double half = 0.5 * u * fabs(a->px1 - a->px0);
    a->lo = mid - half, a->hi = mid + half;
}

/* The label of tick value v for ticks `step` apart: fixed notation with
 * just enough decimals, scientific for very large or small magnitudes. */
static void tick_label(char *buf, size_t size, double v, double step,
                       double amax)
{
    int e = (int)floor(log10(step) + 1e-9);
    if (fabs(v) < 1e-9 * step) v = 0; /* no "-0" or 1e-17 at the origin */
    if (amax >= 1e6 || (amax < 1e-4 && amax > 0) || e < -6) {
        int digits = (int)floor(log10(amax)) - e;
        snprintf(buf, size, "%.*e", digits < 0 ? 0 : digits > 12 ? 12 : digits, v);
    } else {
        snprintf(buf, size, "%.*f", e < 0 ? -e : 0, v);
    }
}

/* Tick marks, grid lines and labels of one axis (horizontal: x). */
static void put_ticks(ch_buf *b, const axis *a, const axis *other, int horizontal)
{
    double step = nice_step((a->hi - a->lo) / 6.0);
    double first = ceil(a->lo / step - 1e-9), amax = fmax(fabs(a->lo), fabs(a->hi));
    for (int i = 0; i < 40; i++) {
        double v = (first + i) * step;
        if (v > a->hi + 1e-9 * step) break;
        double p = to_px(a, v);
        char lab[64];
        tick_label(lab, sizeof lab, v, step, amax);
        if (horizontal) {
            ch_buf_printf(b, "<line class=\"grid\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
                          "y2=\"%.2f\"/>\n", p, other->px0, p, other->px1);
            ch_buf_printf(b, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
                          "y2=\"%.2f\"/>\n", p, other->px0, p, other->px0 + 5);
            ch_buf_printf(b, "<text class=\"ticklabel\" x=\"%.2f\" y=\"%.2f\" "
                          "text-anchor=\"middle\">%s</text>\n", p, other->px0 + 18, lab);
        } else {
            ch_buf_printf(b, "<line class=\"grid\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
                          "y2=\"%.2f\"/>\n", other->px0, p, other->px1, p);
            ch_buf_printf(b, "<line class=\"tick\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
                          "y2=\"%.2f\"/>\n", other->px0 - 5, p, other->px0, p);
            /* y is the tick itself; dy centres the digits on it */
            ch_buf_printf(b, "<text class=\"ticklabel\" x=\"%.2f\" y=\"%.2f\" "
                          "dy=\"0.35em\" text-anchor=\"end\">%s</text>\n",
                          other->px0 - 8, p, lab);
        }
    }
}

/* One series as one path: "M" starts every run of finite points. */
static void put_series(ch_buf *b, const ch_plot_series *s, const char *colour,
                       const axis *ax, const axis *ay)
{
    size_t k = (s->n + CH_PLOT_MAX_POINTS - 1) / CH_PLOT_MAX_POINTS;
    if (k == 0) k = 1;
    ch_buf_printf(b, "<path class=\"series\" fill=\"none\" stroke=\"%s\" "
                  "stroke-width=\"1.8\" stroke-linejoin=\"round\"%s d=\"", colour,
                  s->dashed ? " stroke-dasharray=\"6 4\"" : "");
    int pen = 0, first = 1;
    for (size_t j = 0; j < s->n; j += k) {
        if (j + k >= s->n) j = s->n - 1; /* the last point is always drawn */
        double x = s->x[j], y = s->y[j];
        if (!isfinite(x) || !isfinite(y)) {
            pen = 0;
            continue;
        }
        ch_buf_printf(b, "%s%.2f %.2f", pen ? " L" : first ? "M" : " M",
                      to_px(ax, x), to_px(ay, y));
        pen = 1, first = 0;
    }
    ch_buf_put(b, "\"><title>");
    put_escaped(b, s->name);
    ch_buf_put(b, "</title></path>\n");
}

static void put_legend(ch_buf *b, size_t ns, const ch_plot_series *s, double x,
                       double y)
{
    ch_buf_put(b, "<g class=\"legend\">\n");
    for (size_t i = 0; i < ns; i++) {
        double yy = y + (double)i * LEGEND_ROW;
        ch_buf_printf(b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                      "stroke=\"%s\" stroke-width=\"3\"%s/>\n", x, yy, x + 22, yy,
                      palette[i % (sizeof palette / sizeof palette[0])],
                      s[i].dashed ? " stroke-dasharray=\"6 4\"" : "");
        ch_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\">", x + 28, yy + 4);
        put_escaped(b, s[i].name);
        ch_buf_put(b, "</text>\n");
    }
    ch_buf_put(b, "</g>\n");
}

static double legend_width(size_t ns, const ch_plot_series *s)
{
    size_t w = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t l = strlen(s[i].name);
        if (l > w) w = l;
    }
    if (w > 24) w = 24; /* longer names overflow rather than squash the plot */
    return 40.0 + 7.0 * (double)w;
}

static void put_labels(ch_buf *b, const ch_plot_options *o, const axis *ax,
                       const axis *ay)
{
    if (o->title) {
        ch_buf_printf(b, "<text class=\"title\" x=\"%.2f\" y=\"24\" "
                      "text-anchor=\"middle\" font-size=\"15\">",
                      0.5 * (ax->px0 + ax->px1));
        put_escaped(b, o->title);
        ch_buf_put(b, "</text>\n");
    }
    ch_buf_printf(b, "<text class=\"xlabel\" x=\"%.2f\" y=\"%d\" "
                  "text-anchor=\"middle\">", 0.5 * (ax->px0 + ax->px1), HEIGHT - 10);
    put_escaped(b, o->xlabel ? o->xlabel : "");
    ch_buf_put(b, "</text>\n");
    double cy = 0.5 * (ay->px0 + ay->px1);
    ch_buf_printf(b, "<text class=\"ylabel\" x=\"16\" y=\"%.2f\" text-anchor=\"middle\" "
                  "transform=\"rotate(-90 16 %.2f)\">", cy, cy);
    put_escaped(b, o->ylabel ? o->ylabel : "");
    ch_buf_put(b, "</text>\n");
}

int ch_plot_svg(ch_buf *out, const ch_plot_options *o, size_t ns,
                const ch_plot_series *s, ch_error *err)
{
    if (ns == 0 || ns > CH_PLOT_MAX_SERIES)
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "a plot needs 1 to %d series (got %zu)",
                            CH_PLOT_MAX_SERIES, ns);
    axis ax, ay;
    if (!data_range(ns, s, 0, &ax.lo, &ax.hi) || !data_range(ns, s, 1, &ay.lo, &ay.hi))
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "nothing to plot: no finite point");
    pad_range(&ax.lo, &ax.hi);
    pad_range(&ay.lo, &ay.hi);
    if (!isfinite(ax.hi - ax.lo) || !isfinite(ay.hi - ay.lo))
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            "nothing to plot: the values span more than a double holds");
    double top = o->title ? TOP_TITLE : TOP_PLAIN;
    double right = WIDTH - legend_width(ns, s) - LEGEND_GAP;
    ax.px0 = LEFT, ax.px1 = right;
    ay.px0 = HEIGHT - BOTTOM, ay.px1 = top; /* SVG y grows downwards */
    if (o->equal_aspect) equalize(&ax, &ay);

    ch_buf_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
                  "sans-serif\" font-size=\"12\">\n", WIDTH, HEIGHT, WIDTH, HEIGHT);
    ch_buf_put(out, "<style>.grid{stroke:#e6e6e6;stroke-width:1}"
               ".axis,.tick{stroke:#333;stroke-width:1}</style>\n");
    ch_buf_printf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n",
                  WIDTH, HEIGHT);
    put_ticks(out, &ax, &ay, 1);
    put_ticks(out, &ay, &ax, 0);
    ch_buf_printf(out, "<line class=\"axis\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n",
                  ax.px0, ay.px0, ax.px1, ay.px0);
    ch_buf_printf(out, "<line class=\"axis\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n",
                  ax.px0, ay.px0, ax.px0, ay.px1);
    for (size_t i = 0; i < ns; i++)
        put_series(out, &s[i], palette[i % (sizeof palette / sizeof palette[0])], &ax, &ay);
    put_legend(out, ns, s, right + LEGEND_GAP, top + 8);
    put_labels(out, o, &ax, &ay);
    ch_buf_put(out, "</svg>\n");
    if (out->oom) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    return 0;
}

/* ---- table -------------------------------------------------------------- */

void ch_table_init(ch_table *tb)
{
    memset(tb, 0, sizeof *tb);
}

void ch_table_free(ch_table *tb)
{
    for (size_t i = 0; i < tb->ncols; i++) free(tb->names[i]);
    free(tb->names);
    free(tb->v);
    ch_table_init(tb);
}

static int oom(ch_error *err)
{
    return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
}

int ch_table_set_columns(ch_table *tb, size_t ncols, const char *const *names,
                         ch_error *err)
{
    ch_table_free(tb);
    tb->names = calloc(ncols ? ncols : 1, sizeof *tb->names);
    if (!tb->names) return oom(err);
    tb->ncols = ncols;
    for (size_t i = 0; i < ncols; i++)
        if (!(tb->names[i] = strdup(names[i]))) return oom(err);
    return 0;
}

int ch_table_add_row(ch_table *tb, const double *row, ch_error *err)
{
    if (tb->nrows == tb->cap) {
        size_t cap = tb->cap ? 2 * tb->cap : 256;
        double *v = realloc(tb->v, cap * (tb->ncols ? tb->ncols : 1) * sizeof *v);
        if (!v) return oom(err);
        tb->v = v, tb->cap = cap;
    }
    memcpy(tb->v + tb->nrows * tb->ncols, row, tb->ncols * sizeof *row);
    tb->nrows++;
    return 0;
}

int ch_table_column(const ch_table *tb, const char *name)
{
    for (size_t i = 0; i < tb->ncols; i++)
        if (!strcmp(tb->names[i], name)) return (int)i;
    return -1;
}

static int unknown_column(const ch_table *tb, const char *name, ch_error *err)
{
    char list[400] = "";
    for (size_t i = 0; i < tb->ncols; i++)
        ch_str_append(list, sizeof list, "%s%s", i ? ", " : "", tb->names[i]);
    return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                        "no variable '%s' to plot (there are: %s)", name, list);
}

/* Column c of the table as a contiguous array (caller frees). */
static double *column(const ch_table *tb, int c)
{
    double *v = malloc((tb->nrows ? tb->nrows : 1) * sizeof *v);
    if (v)
        for (size_t r = 0; r < tb->nrows; r++) v[r] = tb->v[r * tb->ncols + (size_t)c];
    return v;
}

int ch_table_plot(ch_buf *out, const ch_table *tb, const char *title,
                  const char *xcol, size_t ny, const char *const *ycols,
                  ch_error *err)
{
    if (ny == 0 || ny > CH_PLOT_MAX_SERIES || (xcol && ny != 1))
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0,
                            xcol ? "an xy plot needs exactly one y variable"
                                 : "plot 1 to 16 variables at a time");
    if (tb->ncols == 0 || tb->nrows == 0)
        return ch_error_set(err, CH_ERR_USAGE, NULL, 0, 0, "nothing to plot: no rows");
    int xc = xcol ? ch_table_column(tb, xcol) : 0;
    if (xc < 0) return unknown_column(tb, xcol, err);
    ch_plot_series s[CH_PLOT_MAX_SERIES];
    double *cols[CH_PLOT_MAX_SERIES + 1] = {0};
    int rc = 0;
    if (!(cols[0] = column(tb, xc))) rc = oom(err);
    for (size_t i = 0; !rc && i < ny; i++) {
        int c = ch_table_column(tb, ycols[i]);
        if (c < 0) rc = unknown_column(tb, ycols[i], err);
        else if (!(cols[i + 1] = column(tb, c))) rc = oom(err);
        else s[i] = (ch_plot_series){ycols[i], tb->nrows, cols[0], cols[i + 1], 0};
    }
    char xyname[160];
    if (!rc && xcol) { /* the legend names the plane, not just y */
        snprintf(xyname, sizeof xyname, "(%s, %s)", xcol, ycols[0]);
        s[0].name = xyname;
    }
    if (!rc) {
        ch_plot_options o = {title, tb->names[xc], xcol ? ycols[0] : NULL, xcol != NULL};
        char ylab[200] = "";
        for (size_t i = 0; !xcol && i < ny; i++)
            ch_str_append(ylab, sizeof ylab, "%s%s", i ? ", " : "", ycols[i]);
        if (!xcol) o.ylabel = ylab;
        rc = ch_plot_svg(out, &o, ny, s, err);
    }
    for (size_t i = 0; i <= ny; i++) free(cols[i]);
    return rc;
}
