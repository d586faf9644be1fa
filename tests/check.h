/* check.h — the unit-test harness: CHECK macros and a per-binary summary.
 *
 * Each test binary defines its tests as functions, runs them with RUN(), and
 * returns check_summary(). A failing CHECK prints the file, line and
 * expression and the test continues; the binary exits 1 if anything failed.
 * The summary line "NAME: N checks passed, M failed" lets a reader see how
 * much a binary verified. */
#ifndef CH_TEST_CHECK_H
#define CH_TEST_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;
static const char *check_current = "";

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (cond) check_passed++;                                           \
        else {                                                              \
            check_failed++;                                                 \
            fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", __FILE__,     \
                    __LINE__, check_current, #cond);                        \
        }                                                                   \
    } while (0)

#define CHECK_MSG(cond, ...)                                                \
    do {                                                                    \
        if (cond) check_passed++;                                           \
        else {                                                              \
            check_failed++;                                                 \
            fprintf(stderr, "%s:%d: [%s] CHECK failed: %s: ", __FILE__,     \
                    __LINE__, check_current, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

#define CHECK_STR(got, want)                                                \
    do {                                                                    \
        const char *g_ = (got), *w_ = (want);                               \
        CHECK_MSG(g_ && strcmp(g_, w_) == 0, "got \"%s\", want \"%s\"",     \
                  g_ ? g_ : "(null)", w_);                                  \
    } while (0)

#define CHECK_NEAR(got, want, tol)                                          \
    do {                                                                    \
        double g_ = (got), w_ = (want);                                     \
        CHECK_MSG(fabs(g_ - w_) <= (tol), "got %.17g, want %.17g", g_, w_); \
    } while (0)

#define RUN(fn)                                                             \
    do {                                                                    \
        check_current = #fn;                                                \
        fn();                                                               \
    } while (0)

static int check_summary(const char *name)
{
    printf("%s: %d checks passed, %d failed\n", name, check_passed,
           check_failed);
    return check_failed ? 1 : 0;
}

#endif
