/* report.h — the report of `chetaev check`: the audit of the conserved
 * quantities (mech/audit.h) and, with --loop N, the Poincare-Cartan loop
 * measured by the JIT layer (jit/loop.h), as readable text or as the SPEC
 * §2 JSON object. */
#ifndef CH_REPORT_H
#define CH_REPORT_H

#include "core/buf.h"
#include "jit/loop.h"
#include "mech/audit.h"
#include "mech/mechanics.h"

/* loop is the measurement of `check --loop N`, or NULL ("loop": null). */
void ch_audit_write_text(ch_buf *out, const ch_audit *a,
                         const ch_loop_result *loop);
void ch_audit_write_json(ch_buf *out, const ch_audit *a,
                         const ch_loop_result *loop);

/* The loop of `check --loop N --plot` as an SVG into out: the (q_r, y*_r)
 * curves at t1, each centred on its mean, over the start curve (the same
 * circle for every r, drawn once, dashed): the transport moves the loop
 * far compared with its size, and what matters is its shape and enclosed
 * area (pi radius^2 each at t = 0). lr must keep its states. 0, or -1
 * with err filled. */
int ch_loop_svg(ch_buf *out, const ch_mechanics *d, const ch_loop_result *lr, ch_error *err);

#endif
