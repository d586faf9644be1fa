/* test_plot.c — gen/doc/plot.h: the CSV table (parsing, malformed input), the
 * SVG writer's refusals (no series, no finite point, values beyond a
 * double's span), tick labels at nice numbers in fixed and scientific
 * notation, a constant series, NaN gaps that break the line, escaping of
 * names, thinning of long series that keeps the last point, and
 * deterministic output. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "doc/plot.h"

/* Number of occurrences of needle in s. */
static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* The tick labels in document order ("<text class="ticklabel" ...>L<"). */
static int labels(const char *svg, char out[][32], int max)
{
    int n = 0;
    for (const char *p = strstr(svg, "class=\"ticklabel\""); p && n < max;
         p = strstr(p + 1, "class=\"ticklabel\"")) {
        const char *a = strchr(p, '>') + 1, *b = strchr(a, '<');
        snprintf(out[n++], 32, "%.*s", (int)(b - a), a);
    }
    return n;
}

static int plot(ch_buf *b, size_t n, const double *x, const double *y,
                const char *name, int equal, ch_error *err)
{
    ch_plot_series s = {name, n, x, y, 0};
    ch_plot_options o = {"title", "t", "v", equal};
    ch_buf_reset(b);
    ch_error_clear(err);
    return ch_plot_svg(b, &o, 1, &s, err);
}

static void test_table(void)
{
    ch_table tb;
    ch_table_init(&tb);
    ch_error err;
    ch_error_clear(&err);
    static const char *const names[] = {"t", "x", "x'"};
    const double rows[3][3] = {{0, 1, 2}, {0.5, NAN, -3e-2}, {1, INFINITY, 4}};
    CHECK(ch_table_set_columns(&tb, 3, names, &err) == 0);
    for (int i = 0; i < 3; i++) CHECK(ch_table_add_row(&tb, rows[i], &err) == 0);
    CHECK(tb.ncols == 3 && tb.nrows == 3);
    CHECK(ch_table_column(&tb, "x'") == 2 && ch_table_column(&tb, "y") == -1);
    CHECK(tb.v[5] == -3e-2 && isnan(tb.v[4]) && isinf(tb.v[7]));
    /* An unknown column names the valid ones. */
    ch_buf b;
    ch_buf_init(&b);
    const char *ys[] = {"y"};
    CHECK(ch_table_plot(&b, &tb, NULL, NULL, 1, ys, &err) == CH_ERR_USAGE);
    CHECK(strstr(err.msg, "'y'") && strstr(err.msg, "t, x, x'"));
    const char *two[] = {"x", "x'"};
    CHECK(ch_table_plot(&b, &tb, NULL, "t", 2, two, &err) == CH_ERR_USAGE);
    ch_buf_reset(&b);
    CHECK(ch_table_plot(&b, &tb, NULL, "x'", 1, two, &err) == 0);
    CHECK(strstr(b.s, ">(x&apos;, x)</text>") != NULL);
    ch_buf_free(&b);
    ch_table_free(&tb);
}

static void test_refusals(void)
{
    ch_buf b;
    ch_buf_init(&b);
    ch_error err;
    ch_plot_options o = {NULL, "x", "y", 0};
    ch_error_clear(&err);
    CHECK(ch_plot_svg(&b, &o, 0, NULL, &err) == CH_ERR_USAGE);
    double x[3] = {0, 1, 2}, nan3[3] = {NAN, NAN, NAN}, big[3] = {-1.7e308, 0, 1.7e308};
    CHECK(plot(&b, 3, x, nan3, "a", 0, &err) == CH_ERR_USAGE);
    CHECK(strstr(err.msg, "no finite point") != NULL);
    CHECK(plot(&b, 3, x, big, "a", 0, &err) == CH_ERR_USAGE);
    ch_buf_free(&b);
}

static void test_ticks(void)
{
    ch_buf b;
    ch_buf_init(&b);
    ch_error err;
    char lab[40][32];
    double x[2] = {0, 1}, y[2] = {0, 1};
    CHECK(plot(&b, 2, x, y, "a", 0, &err) == 0);
    int n = labels(b.s, lab, 40);
    CHECK(n == 12); /* 0.0 .. 1.0 by 0.2 on both axes */
    CHECK_STR(lab[0], "0.0");
    CHECK_STR(lab[5], "1.0");
    CHECK_STR(lab[1], "0.2");
    /* Small values: scientific, distinct. */
    double ys[2] = {0, 3e-7};
    CHECK(plot(&b, 2, x, ys, "a", 0, &err) == 0);
    n = labels(b.s, lab, 40);
    CHECK(n > 8 && strchr(lab[n - 1], 'e') != NULL);
    for (int i = 7; i < n; i++)
        for (int j = i + 1; j < n; j++) CHECK_MSG(strcmp(lab[i], lab[j]), "%s", lab[i]);
    /* A constant series gets a window and distinct labels, no "-0". */
    double c[2] = {-9.81, -9.81};
    CHECK(plot(&b, 2, x, c, "E", 0, &err) == 0);
    n = labels(b.s, lab, 40);
    CHECK(n > 8);
    for (int i = 6; i < n; i++) {
        CHECK(strcmp(lab[i], "-0") && strcmp(lab[i], "-0.0"));
        for (int j = i + 1; j < n; j++) CHECK(strcmp(lab[i], lab[j]));
    }
    /* Large magnitudes: scientific. */
    double yl[2] = {1e7, 3e7};
    CHECK(plot(&b, 2, x, yl, "a", 0, &err) == 0);
    n = labels(b.s, lab, 40);
    CHECK(strstr(lab[n - 1], "e+07") != NULL);
    ch_buf_free(&b);
}

static void test_paths(void)
{
    ch_buf b, b2;
    ch_buf_init(&b);
    ch_buf_init(&b2);
    ch_error err;
    double x[5] = {0, 1, 2, 3, 4}, y[5] = {0, 1, NAN, 3, 4};
    CHECK(plot(&b, 5, x, y, "a<&\"'>", 0, &err) == 0);
    CHECK(count(b.s, "class=\"series\"") == 1);
    CHECK(count(b.s, " M") == 1 && count(b.s, "d=\"M") == 1); /* two runs */
    CHECK(count(b.s, "a&lt;&amp;&quot;&apos;&gt;") == 2);   /* legend and title */
    CHECK(strstr(b.s, "nan") == NULL && strstr(b.s, "inf") == NULL);
    CHECK(strstr(b.s, "viewBox=\"0 0 ") != NULL);
    CHECK(count(b.s, "class=\"axis\"") == 2);
    CHECK(plot(&b2, 5, x, y, "a<&\"'>", 0, &err) == 0);
    CHECK(b.len == b2.len && !memcmp(b.s, b2.s, b.len)); /* deterministic */

    /* Thinning: at most CH_PLOT_MAX_POINTS + 1 points, the last one kept
     * (it is the right end of the x axis: the largest x coordinate). */
    size_t N = 100003;
    double *tx = malloc(N * sizeof *tx), *ty = malloc(N * sizeof *ty);
    for (size_t i = 0; i < N; i++) tx[i] = (double)i, ty[i] = sin(1e-4 * (double)i);
    CHECK(plot(&b, N, tx, ty, "s", 0, &err) == 0);
    const char *d = strstr(b.s, " d=\"") + 4;
    int pts = 1;
    double last = 0, maxx = 0;
    for (const char *p = d; *p != '"'; p++)
        if (*p == 'L') pts++;
    for (const char *p = d; p && *p != '"'; p = strpbrk(p + 1, "ML\"")) {
        if (*p == '"') break;
        last = strtod(p + 1, NULL);
        if (last > maxx) maxx = last;
    }
    CHECK_MSG(pts <= CH_PLOT_MAX_POINTS + 1 && pts > CH_PLOT_MAX_POINTS / 2, "%d points", pts);
    CHECK(last == maxx);
    free(tx), free(ty);
    ch_buf_free(&b);
    ch_buf_free(&b2);
}

/* Equal aspect: one pixel means the same in x and y (a unit circle's
 * extent in pixels is the same both ways). */
static void test_equal_aspect(void)
{
    ch_buf b;
    ch_buf_init(&b);
    ch_error err;
    enum { N = 65 };
    double x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = 5 + cos(0.1 * i), y[i] = -3 + 0.5 * sin(0.1 * i);
    CHECK(plot(&b, N, x, y, "c", 1, &err) == 0);
    double x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
    const char *d = strstr(b.s, " d=\"") + 4;
    for (const char *p = d; p && *p != '"'; p = strpbrk(p + 1, "ML\"")) {
        if (*p == '"') break;
        char *e;
        double px = strtod(p + 1, &e), py = strtod(e, NULL);
        x0 = fmin(x0, px), x1 = fmax(x1, px), y0 = fmin(y0, py), y1 = fmax(y1, py);
    }
    double dx = 0, dy = 0; /* data extents */
    double mnx = 1e9, mxx = -1e9, mny = 1e9, mxy = -1e9;
    for (int i = 0; i < N; i++)
        mnx = fmin(mnx, x[i]), mxx = fmax(mxx, x[i]), mny = fmin(mny, y[i]), mxy = fmax(mxy, y[i]);
    dx = mxx - mnx, dy = mxy - mny;
    CHECK_NEAR((x1 - x0) / dx, (y1 - y0) / dy, 0.01 * (x1 - x0) / dx);
    ch_buf_free(&b);
}

int main(void)
{
    RUN(test_table);
    RUN(test_refusals);
    RUN(test_ticks);
    RUN(test_paths);
    RUN(test_equal_aspect);
    return check_summary("plot");
}
