/* main.c — a program outside the chetaev tree, built against the
 * installed library with pkg-config (see the Makefile next to it).
 *
 * Usage: simulate MODEL [T [NAME=VALUE ...]]
 * Loads MODEL (a *.nh file), compiles its reduced form in process, sets
 * the given parameters (without recompiling), integrates from the model's
 * initial state to T (default 1) with the default method (dop853, error-
 * controlled at the default tolerances; first step chosen), and prints two
 * CSV lines: the header and the final row of the mandatory columns of
 * `chetaev run` (t, the coordinates, all velocities, E), so that the
 * result can be compared with `chetaev run MODEL --t1 T --set NAME=VALUE`.
 * Exit status: 0, or the ch_err code (1 model, 2 usage, 3 numeric ...). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <chetaev.h>

static int fail(const char *what, const ch_err *err)
{
    char buf[1024];
    ch_err_format(err, buf, sizeof buf);
    fprintf(stderr, "simulate: %s: %s\n", what, buf);
    return err->code ? err->code : 1;
}

/* Applies NAME=VALUE arguments as parameter values. */
static int set_params(ch_system *s, int argc, char **argv, ch_err *err)
{
    for (int i = 0; i < argc; i++) {
        char name[128];
        const char *eq = strchr(argv[i], '=');
        char *end;
        if (!eq || (size_t)(eq - argv[i]) >= sizeof name) {
            fprintf(stderr, "simulate: expected NAME=VALUE, got '%s'\n", argv[i]);
            return 2;
        }
        memcpy(name, argv[i], (size_t)(eq - argv[i]));
        name[eq - argv[i]] = '\0';
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end) {
            fprintf(stderr, "simulate: bad number in '%s'\n", argv[i]);
            return 2;
        }
        if (ch_system_set_param(s, name, v, err)) return fail("set", err);
    }
    return 0;
}

/* The header and the current row: t, coordinates, velocities, E. */
static int print_state(const ch_system *s, ch_err *err)
{
    int nq = ch_system_nq(s);
    double *qt = malloc((size_t)nq * sizeof *qt);
    if (!qt) return 5;
    if (ch_system_velocities(s, qt, err)) {
        free(qt);
        return fail("velocities", err);
    }
    const double *x = ch_system_state(s);
    printf("t");
    for (int i = 0; i < nq; i++) printf(",%s", ch_system_state_name(s, i));
    for (int i = 0; i < nq; i++) printf(",%s'", ch_system_state_name(s, i));
    printf(",E\n%.17g", ch_system_time(s));
    for (int i = 0; i < nq; i++) printf(",%.17g", x[i]);
    for (int i = 0; i < nq; i++) printf(",%.17g", qt[i]);
    printf(",%.17g\n", ch_system_energy(s));
    free(qt);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: simulate MODEL [T [NAME=VALUE ...]]\n");
        return 2;
    }
    double t1 = argc > 2 ? strtod(argv[2], NULL) : 1.0;
    ch_err err;
    ch_problem *pb = ch_problem_load(argv[1], &err);
    if (!pb) return fail("load", &err);
    ch_system *s = ch_system_compile(pb, "reduced", "tcc", &err);
    ch_problem_free(pb);
    if (!s) return fail("compile", &err);

    int rc = argc > 3 ? set_params(s, argc - 3, argv + 3, &err) : 0;
    if (!rc && ch_system_reset(s, &err)) rc = fail("reset", &err);
    if (!rc && ch_system_integrate(s, t1, NULL, 0, &err)) rc = fail("integrate", &err);
    if (!rc) rc = print_state(s, &err);
    ch_system_free(s);
    return rc;
}
