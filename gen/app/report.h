/* report.h — the report of `chetaev check`: the audit of the conserved
 * quantities (mech/audit.h) and, with --loop N, the Poincare-Cartan loop
 * measured by the JIT layer (jit/loop.h), as readable text or as the SPEC
 * §2 JSON object. */
#ifndef CH_REPORT_H
#define CH_REPORT_H

#include "core/buf.h"
#include "jit/loop.h"
#include "mech/audit.h"

/* loop is the measurement of `check --loop N`, or NULL ("loop": null). */
void ch_audit_write_text(ch_buf *out, const ch_audit *a,
                         const ch_loop_result *loop);
void ch_audit_write_json(ch_buf *out, const ch_audit *a,
                         const ch_loop_result *loop);

#endif
