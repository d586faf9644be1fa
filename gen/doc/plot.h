/* plot.h — self-contained SVG line plots (`run --plot`, `check --loop
 * --plot`, the repl's `plot`) and the small column table they draw from.
 *
 * A plot has one or more series, each a sequence of (x, y) points drawn
 * as one <path> in its own colour, on axes with ticks at "nice" numbers
 * (1, 2 or 5 times a power of ten), axis labels, an optional title and a
 * legend naming every series. Time series use independent x and y
 * scales; trajectories in a plane (equal_aspect) use one scale for both
 * so that circles look round. Non-finite points are left out and break
 * the line. Output is deterministic text in a ch_buf: the library writes
 * no files. */
#ifndef CH_PLOT_H
#define CH_PLOT_H

#include <stddef.h>

#include "core/buf.h"
#include "core/error.h"

typedef struct {
    const char *name;  /* legend text (escaped on output) */
    size_t n;
    const double *x, *y; /* n values each */
    int dashed;          /* a reference curve drawn dashed */
} ch_plot_series;

typedef struct {
    const char *title;   /* NULL: none */
    const char *xlabel, *ylabel;
    int equal_aspect;    /* one scale for x and y (trajectories) */
} ch_plot_options;

/* At most this many points per series are drawn: longer series are
 * thinned to every k-th point (the last is always kept), which no screen
 * can tell apart and which keeps files small. */
#define CH_PLOT_MAX_POINTS 4000
#define CH_PLOT_MAX_SERIES 16

/* Writes the SVG document. CH_ERR_USAGE when there is no series, too
 * many, or no finite point at all; CH_ERR_MEMORY when out grew out of
 * memory. */
int ch_plot_svg(ch_buf *out, const ch_plot_options *o, size_t nseries,
                const ch_plot_series *s, ch_error *err);

/* ---- a table of named columns (e.g. the CSV of `run`) ----------------- */

typedef struct {
    size_t ncols, nrows, cap;
    char **names;   /* ncols */
    double *v;      /* nrows * ncols, row-major */
} ch_table;

void ch_table_init(ch_table *tb);
void ch_table_free(ch_table *tb);
/* Sets the column names (copied); the table must be empty. */
int ch_table_set_columns(ch_table *tb, size_t ncols, const char *const *names,
                         ch_error *err);
/* Appends one row of ncols values. */
int ch_table_add_row(ch_table *tb, const double *row, ch_error *err);
/* Index of a column, -1 when none. */
int ch_table_column(const ch_table *tb, const char *name);

/* Plots columns of a table: with xcol NULL, every name in ycols against
 * the first column (time series); with xcol given, the single column
 * ycols[0] against xcol (a trajectory, equal aspect). An unknown name is
 * CH_ERR_USAGE naming it and the valid ones. Column values are copied
 * into contiguous arrays (the table is row-major). */
int ch_table_plot(ch_buf *out, const ch_table *tb, const char *title,
                  const char *xcol, size_t ny, const char *const *ycols,
                  ch_error *err);

#endif
