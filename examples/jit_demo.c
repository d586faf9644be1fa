/* jit_demo.c — the library API (chetaev.h) on the Chaplygin sleigh.
 *
 * Loads examples/chaplygin_sleigh.nh, compiles the reduced form in memory
 * once, integrates with the default parameters, then changes the knife
 * edge's offset `a` without recompiling and integrates again from the
 * model's initial state. Prints, for each run, the initial and final
 * energy and the final state; the sleigh has no forces, so the energy of
 * each run is conserved. Usage: jit_demo [MODEL] (default: the example,
 * found through SRCDIR at build time). */
#include <math.h>
#include <stdio.h>

#include "chetaev.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

static int die(const char *what, const ch_err *err)
{
    char buf[1024];
    ch_err_format(err, buf, sizeof buf);
    fprintf(stderr, "jit_demo: %s: %s\n", what, buf);
    return 1;
}

/* Integrates from the reset state to t = 10 and prints the result. */
static int run(ch_system *s, const char *label, ch_err *err)
{
    if (ch_system_reset(s, err)) return die("reset", err);
    double e0 = ch_system_energy(s);
    if (ch_system_integrate(s, 10.0, "rk4", 1e-3, err)) return die("integrate", err);
    double e1 = ch_system_energy(s);
    const double *x = ch_system_state(s);
    printf("%s a=%.17g t=%.17g", label, ch_system_params(s)[ch_system_param_index(s, "a")],
           ch_system_time(s));
    for (int i = 0; i < ch_system_nx(s); i++)
        printf(" %s=%.17g", ch_system_state_name(s, i), x[i]);
    printf(" E0=%.17g E1=%.17g drift=%.3g\n", e0, e1, fabs(e1 - e0));
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : SRCDIR "/examples/chaplygin_sleigh.nh";
    ch_err err;
    ch_problem *pb = ch_problem_load(path, &err);
    if (!pb) return die("load", &err);
    ch_system *s = ch_system_compile(pb, "reduced", "tcc", &err);
    ch_problem_free(pb); /* the compiled system does not need it */
    if (!s) return die("compile", &err);

    printf("system %s: %d states, %d parameters\n", ch_system_prefix(s),
           ch_system_nx(s), ch_system_np(s));
    for (int i = 0; i < ch_system_np(s); i++)
        printf("parameter %s = %g\n", ch_system_param_name(s, i),
               ch_system_param_default(s, i));

    int rc = run(s, "default", &err);
    if (!rc && ch_system_set_param(s, "a", 0.6, &err)) rc = die("set a", &err);
    if (!rc) rc = run(s, "changed", &err);
    ch_system_free(s);
    return rc;
}
