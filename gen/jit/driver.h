/* driver.h — gluing emitted code to the runtime (runtime/simulate.h).
 *
 * Two ways to run a system that must give the same CSV bytes: `emit
 * --driver` writes a main.c that fills a chrt_system from the PREFIX_
 * symbols and calls chrt_main, next to copies of the runtime sources
 * (embedded in the binary); `run` compiles PREFIX.h + PREFIX.c as one
 * translation unit (ch_driver_jit_unit), binds the same struct from the JIT
 * symbols (ch_driver_bind) and calls chrt_main with the same options.
 * Prefixes are C identifiers (checked by ch_driver_prefix_ok) because they
 * are pasted into C text. */
#ifndef CH_DRIVER_H
#define CH_DRIVER_H

#include <stddef.h>

#include "core/buf.h"
#include "core/error.h"
#include "jit/jit.h"
#include "doc/plot.h"
#include "runtime/simulate.h"

/* 1 when prefix is a C identifier of at most 64 characters. */
int ch_driver_prefix_ok(const char *prefix);

/* The driver's main.c for emitted code with this prefix. */
void ch_emit_driver(const char *prefix, ch_buf *main_c);

/* The runtime sources the driver needs, by index (0, 1, ...): the file
 * name to write next to main.c and its contents. Returns 0, 1 past the
 * end, or an error (CH_ERR_IO) when the sources are not embedded. */
int ch_driver_runtime_file(size_t i, const char **name, const char **text,
                           size_t *len, ch_error *err);

/* What the JIT puts where emitted code includes <math.h> (the prelude
 * of ch_emit_c_chart): declarations of the functions the emitted code
 * calls, which tcc resolves from this process, and HUGE_VAL. */
const char *ch_driver_math_prelude(void);

/* One translation unit for the JIT: the source (emitted with
 * ch_driver_math_prelude, so that it compiles alone), then a table of the
 * PREFIX_N* macros so that the sizes can be read as a symbol
 * (PREFIX_chrt_dims). */
void ch_driver_jit_unit(const char *prefix, const char *source, ch_buf *unit);

/* Fills s from a unit compiled by ch_jit_compile (built by
 * ch_driver_jit_unit). A missing symbol is CH_ERR_MODEL naming it. The
 * struct points into the JIT memory and into prefix: both must outlive it. */
int ch_driver_bind(ch_jit *j, const char *prefix, chrt_system *s,
                   ch_error *err);

/* The columns of the CSV of `run` for s (t, the coordinates, their
 * velocities NAME', E, the outputs) as the columns of tb. */
int ch_driver_table_columns(ch_table *tb, const chrt_system *s, ch_error *err);

/* A sink of the integration loop appending every row to tb (whose
 * columns are those above); a row that cannot be stored stops the run. */
void ch_driver_table_sink(ch_table *tb, chrt_sink *sink);

#endif
