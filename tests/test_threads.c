/* test_threads.c — separate objects from separate threads (chetaev.h):
 * four threads each parse, compile (libtcc, whose process-wide state
 * gen/jit/jit.c serialises), integrate and free a model at once; each ends
 * where a serial run does. tests/valgrind.sh runs it under helgrind. */
#include <pthread.h>
#include <string.h>

#include "chetaev.h"
#include "tests/check.h"

static const char model[] =
    "coordinates x y phi\n"
    "parameters m=1 J=0.2 g=9.81 alpha=0.5 c=0.1\n"
    "lagrangian m/2*(x'^2 + y'^2) + J/2*phi'^2 + m*g*sin(alpha)*x\n"
    "constraint sin(phi)*x' - cos(phi)*y' = 0\n"
    "force phi = -c*phi'\n"
    "initial x'=1 phi'=0.3\n";

enum { NTHREADS = 4 };

typedef struct {
    int form;    /* 0 reduced, 1 full */
    double x[6]; /* the final state's coordinates and velocities */
    int rc;
} job;

static void *work(void *arg)
{
    job *j = arg;
    ch_err err;
    j->rc = 1;
    ch_problem *pb = ch_problem_parse("knife.nh", model, strlen(model), &err);
    if (!pb) return NULL;
    ch_system *s = ch_system_compile(pb, j->form ? "full" : "reduced", NULL, &err);
    ch_problem_free(pb);
    if (!s) return NULL;
    if (ch_system_integrate(s, 1, "rk4", 0.01, &err) == 0
        && ch_system_velocities(s, j->x + 3, &err) == 0) {
        memcpy(j->x, ch_system_state(s), 3 * sizeof *j->x);
        j->rc = 0;
    }
    ch_system_free(s);
    return NULL;
}

int main(void)
{
    job serial[2] = {{0, {0}, 1}, {1, {0}, 1}}, par[NTHREADS];
    pthread_t th[NTHREADS];
    /* the threads first: libtcc's first use happens in them */
    for (int i = 0; i < NTHREADS; i++) {
        memset(&par[i], 0, sizeof par[i]);
        par[i].form = i % 2;
        CHECK(pthread_create(&th[i], NULL, work, &par[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    work(&serial[0]);
    work(&serial[1]);
    CHECK(serial[0].rc == 0 && serial[1].rc == 0);
    for (int i = 0; i < NTHREADS; i++) {
        CHECK(par[i].rc == 0);
        for (int k = 0; k < 6; k++) CHECK(par[i].x[k] == serial[i % 2].x[k]);
    }
    return check_summary("threads");
}
