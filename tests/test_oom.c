/* test_oom.c — out-of-memory fault injection (issue 43, item 6): an
 * allocator that fails the k-th allocation, run over every k (or a
 * stride of them, below) of a clean run of the library's pipeline on a
 * few models. No run may crash, abort or leak; each either fails with the
 * out-of-memory error (CH_E_MEMORY, CH_ERR_MEMORY) and a message, or
 * succeeds with what the clean run gave (a failed allocation with a
 * fallback).
 *
 * Mechanism. This binary links libchetaev_oom.a, a copy of libchetaev.a
 * in which objcopy --redefine-syms (tests/oom.syms) renamed every
 * reference to malloc, calloc, realloc, free, strdup, strndup, mmap64 and
 * munmap to oom_malloc ... oom_munmap, defined below. So exactly the
 * library's own allocations (gen/ and runtime/, ch_mem_alloc's calloc and
 * huge-page mmap included) go through the wrappers; FLINT's, GMP's,
 * SUNDIALS's and libc's internal ones do not, nor libtcc's: libtcc.a is
 * linked statically, so ld --wrap, which renames the references of every
 * object of the link, would fail tcc's allocations too, and tcc treats
 * those as fatal (exit). FLINT aborts on its own failures: out of scope.
 *
 * The wrappers count the allocations made while armed; the k-th, or every
 * one from the k-th on, returns NULL (MAP_FAILED; errno ENOMEM). Every
 * block the library allocates, armed or not, is kept in a pointer set
 * with its size; free and realloc of a pointer not in the set (memory
 * FLINT or libc handed out) pass through uncounted, and mapped bytes are
 * counted too. After each run no block of the library may be live and no
 * byte mapped. The same works under AddressSanitizer (the wrappers call
 * its malloc), whose LeakSanitizer checks the rest at exit.
 *
 * Models: examples/knife_edge.nh (a linear nonholonomic constraint),
 * nonlinear_slope.nh (a constraint nonlinear in the velocities: implicit
 * alpha, numeric hamilton form), pendulum_xy.nh (holonomic) and, for
 * load only, rolling_disk.nh (k = 2, events and integrals). Stages, each
 * armed only for its own calls (what it needs first is made unarmed):
 *   load  ch_problem_load: read, parse, derive (public API); a success
 *         is compared by the right-hand side and energy at the initial
 *         state of every form compiled from it;
 *   parse ch_problem_parse on the model's text (knife_edge);
 *   emit  the in-memory C emitter, all three forms with one
 *         ch_emit_cache (`chetaev emit --form all`); a text that differs
 *         from the clean run's must compile (libtcc) to the same values;
 *   jit   ch_system_compile (reduced form, libtcc), ch_system_integrate
 *         to t = 0.05 (dop853), ch_system_reset;
 *   chart the knife edge turning across its chart's singularity: the
 *         model derived again and the other chart compiled inside
 *         ch_system_integrate (dop853), then cvode, then reset;
 *   doc   `chetaev derive` in its four formats into memory
 *         (ch_derivation_prepare, ch_derivation_write);
 *   audit `chetaev check` (ch_audit_run, its text and JSON).
 * Numbers must agree to NUM_TOL (a fallback may build an equal
 * expression in another form). For doc and audit a success after a
 * single failed allocation is not compared: a display simplification or
 * a sample point of the zero test that fails for want of memory is
 * dropped silently and the run goes on (another text, other sampled
 * maxima); a success from the k-th allocation on is compared.
 *
 * Budget (under a minute here; CI runs it also under ASan): the k are
 * those of selected(): every k up to ALL_K, then a deterministic stride
 * (per stage and mode in main's table: 1 for every k), plus every k
 * within EDGE_K of the end of a part of a stage (a form emitted, the
 * compile, an integration) and of its last allocation. Under
 * AddressSanitizer the strides are 6 times as long and ALL_K is 60.
 * OOM_ALL=1 runs every k of every stage (about 4 minutes; it passes
 * too).
 *
 * Debugging: test_oom [STAGE [MODEL]] runs a part; OOM_K=K (or K,once)
 * one run; OOM_TRACE=1 names each run before it starts; OOM_SITES=1 adds
 * the code addresses of the failed allocation to a wrong run's message
 * (for addr2line); OOM_BT=K prints the backtrace of armed allocation K;
 * OOM_DIFF=1 writes oom-ref.txt and oom-got.txt of a wrong success. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "chetaev.h"
#include "codegen/emit_c.h"
#include "core/mem.h"
#include "app/report.h"
#include "doc/derive.h"
#include "jit/compile.h"
#include "jit/driver.h"
#include "lang/model.h"
#include "mech/audit.h"
#include "tests/check.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif

/* ---- the allocator ------------------------------------------------------- */

typedef struct {
    void *p;     /* NULL: empty slot */
    size_t size;
    long seq;    /* the allocation's number while armed (0: not armed) */
} block;

static struct {
    int armed;
    long k;         /* the armed allocation that fails (0: none) */
    int persist;    /* and every one after it */
    long n;         /* allocations while armed */
    long failed;    /* failures injected */
    long bt;        /* OOM_BT: print the backtrace of this armed allocation */
    block *set;     /* open addressing, linear probing */
    size_t cap, live;
    size_t mapped;  /* bytes mapped by the library */
    void *frames[16]; /* OOM_SITES: where the k-th allocation was made */
    int nframes;
} A;

static int sites; /* OOM_SITES=1: wrong runs name the failed allocation */

/* The code addresses of the failed allocation's callers (for addr2line). */
static void print_site(void)
{
    if (!sites || A.nframes < 3) return;
    char **sym = backtrace_symbols(A.frames, A.nframes);
    fputs("  site:", stderr);
    for (int i = 2; sym && i < A.nframes && i < 10; i++) {
        const char *o = strstr(sym[i], "(+");
        fprintf(stderr, " %.*s", o ? (int)strcspn(o + 2, ")") : 0, o ? o + 2 : "");
    }
    fputc('\n', stderr);
    free(sym);
}

static size_t slot_of(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u;
    return (size_t)(h >> 20) & (A.cap - 1);
}

static void set_put(void *p, size_t size, long seq);

static void set_grow(void)
{
    block *old = A.set;
    size_t ocap = A.cap;
    A.cap = ocap ? 2 * ocap : 1 << 12;
    A.set = calloc(A.cap, sizeof *A.set); /* the test's own calloc */
    if (!A.set) {
        fputs("test_oom: out of memory in the test itself\n", stderr);
        exit(2);
    }
    A.live = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].p) set_put(old[i].p, old[i].size, old[i].seq);
    free(old);
}

static void set_put(void *p, size_t size, long seq)
{
    if (2 * (A.live + 1) > A.cap) set_grow();
    size_t i = slot_of(p);
    while (A.set[i].p) i = (i + 1) & (A.cap - 1);
    A.set[i].p = p, A.set[i].size = size, A.set[i].seq = seq;
    A.live++;
}

/* The slot of p, or -1. */
static long set_find(const void *p)
{
    if (!A.cap) return -1;
    for (size_t i = slot_of(p); A.set[i].p; i = (i + 1) & (A.cap - 1))
        if (A.set[i].p == p) return (long)i;
    return -1;
}

/* Removes slot i (backward-shift deletion). */
static void set_del(size_t i)
{
    size_t mask = A.cap - 1;
    A.set[i].p = NULL;
    A.live--;
    for (size_t j = (i + 1) & mask; A.set[j].p; j = (j + 1) & mask) {
        size_t h = slot_of(A.set[j].p);
        /* move j into the hole i unless h lies cyclically in (i, j] */
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j)) continue;
        A.set[i] = A.set[j];
        A.set[j].p = NULL;
        i = j;
    }
}

/* One allocation: 1 when it must fail. */
static int inject(void)
{
    if (!A.armed) return 0;
    A.n++;
    if (A.bt && A.n == A.bt) {
        void *frames[64];
        fprintf(stderr, "test_oom: armed allocation %ld from:\n", A.n);
        backtrace_symbols_fd(frames, backtrace(frames, 64), 2);
    }
    if (A.k && A.n == A.k && sites) A.nframes = backtrace(A.frames, 16);
    if (A.k && (A.n == A.k || (A.persist && A.n > A.k))) {
        A.failed++;
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *oom_malloc(size_t n);
void *oom_calloc(size_t a, size_t b);
void *oom_realloc(void *p, size_t n);
void oom_free(void *p);
char *oom_strdup(const char *s);
char *oom_strndup(const char *s, size_t n);
void *oom_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int oom_munmap(void *addr, size_t len);

void *oom_malloc(size_t n)
{
    if (inject()) return NULL;
    void *p = malloc(n);
    if (p) set_put(p, n, A.armed ? A.n : 0);
    return p;
}

void *oom_calloc(size_t a, size_t b)
{
    if (inject()) return NULL;
    void *p = calloc(a, b);
    if (p) set_put(p, a * b, A.armed ? A.n : 0);
    return p;
}

void *oom_realloc(void *p, size_t n)
{
    if (!p) return oom_malloc(n);
    long i = set_find(p);
    if (i < 0) return realloc(p, n); /* not the library's: passed through */
    if (inject()) return NULL;
    void *q = realloc(p, n);
    if (q || n == 0) set_del((size_t)i);
    if (q) set_put(q, n, A.armed ? A.n : 0);
    return q;
}

void oom_free(void *p)
{
    long i = p ? set_find(p) : -1;
    if (i >= 0) set_del((size_t)i);
    free(p);
}

char *oom_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = oom_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

char *oom_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = oom_malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = 0;
    }
    return p;
}

void *oom_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (inject()) return MAP_FAILED;
    void *p = mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED) A.mapped += len;
    return p;
}

int oom_munmap(void *addr, size_t len)
{
    int rc = munmap(addr, len);
    if (!rc) A.mapped -= len;
    return rc;
}

static void arm(long k, int persist)
{
    A.nframes = 0;
    A.k = k, A.persist = persist, A.n = 0, A.failed = 0, A.armed = 1;
}

static void disarm(void) { A.armed = 0; }

/* Armed again where disarm left off (the count goes on). */
static void rearm(void) { A.armed = 1; }

/* No block of the library live, nothing mapped; reports the leaks and
 * forgets them. */
static int check_no_leak(const char *what)
{
    if (A.live == 0 && A.mapped == 0) return 1;
    size_t bytes = 0;
    long first[5];
    int nf = 0;
    for (size_t i = 0; i < A.cap; i++)
        if (A.set[i].p) {
            bytes += A.set[i].size;
            if (nf < 5) first[nf++] = A.set[i].seq;
        }
    fprintf(stderr, "test_oom: %s: %zu blocks (%zu bytes) leaked, %zu bytes mapped; "
            "allocated by armed allocation", what,
            A.live, bytes, A.mapped);
    for (int i = 0; i < nf; i++) fprintf(stderr, " %ld", first[i]);
    fputc('\n', stderr);
    /* forget them: the next run starts clean */
    for (size_t i = 0; i < A.cap; i++) A.set[i].p = NULL;
    A.live = 0;
    A.mapped = 0;
    return 0;
}

/* ---- the stages ---------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* What a run produced, compared with the clean run's. */
typedef struct {
    int failed;         /* the run returned an error */
    int code;           /* its code */
    char msg[512];
    /* results of a successful run */
    char *out;          /* a text summarising the results (malloc'ed) */
    size_t outlen;
    double *num;        /* numbers, compared to a relative tolerance */
    size_t nnum;
    long marks[4];      /* A.n at the boundaries of the stage's parts */
    int nmarks;
    /* emit: each form's prefix, header and source (NULL: not emitted) */
    char prefix[3][80], *h[3], *c[3];
    /* and their values at the initial state (sem_form) once computed */
    double *sem[3];
} result;

static void result_free(result *r)
{
    free(r->out);
    free(r->num);
    for (int f = 0; f < 3; f++) free(r->h[f]), free(r->c[f]), free(r->sem[f]);
    memset(r, 0, sizeof *r);
}

typedef struct {
    const char *file; /* under examples/ */
    char path[512];
    char *text;       /* the file's bytes */
    size_t len;
} model;

static void out_put(result *r, const void *s, size_t n)
{
    char *o = realloc(r->out, r->outlen + n + 1);
    if (!o) {
        fputs("test_oom: out of memory in the test itself\n", stderr);
        exit(2);
    }
    memcpy(o + r->outlen, s, n);
    r->outlen += n;
    o[r->outlen] = 0;
    r->out = o;
}

static void out_num(result *r, double v)
{
    double *n = realloc(r->num, (r->nnum + 1) * sizeof *n);
    if (!n) {
        fputs("test_oom: out of memory in the test itself\n", stderr);
        exit(2);
    }
    n[r->nnum++] = v;
    r->num = n;
}

static void out_printf(result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_printf(result *r, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    out_put(r, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void fail_pub(result *r, const ch_err *e)
{
    r->failed = 1;
    r->code = e->code;
    snprintf(r->msg, sizeof r->msg, "%s", e->msg);
}

static void fail_int(result *r, const ch_error *e)
{
    r->failed = 1;
    r->code = (int)e->code;
    snprintf(r->msg, sizeof r->msg, "%s", e->msg);
}

/* The right-hand side and energy of every form of pb at the initial state
 * into r (not armed: what a successful load derived). */
static void probe_problem(ch_problem *pb, result *r)
{
    static const char *const forms[] = {"full", "reduced", "hamilton"};
    out_printf(r, "name %s\n", ch_problem_name(pb));
    for (size_t i = 0; i < ch_problem_warning_count(pb); i++)
        out_printf(r, "warning %s\n", ch_problem_warning(pb, i));
    for (int f = 0; f < 3; f++) {
        ch_err e;
        ch_system *s = ch_system_compile(pb, forms[f], "tcc", &e);
        if (!s) {
            out_printf(r, "%s: error %d %s\n", forms[f], e.code, e.msg);
            continue;
        }
        int nx = ch_system_nx(s);
        double dx[64];
        const double *x = ch_system_state(s);
        int rc = nx <= 64 ? ch_system_rhs(s)(0, x, ch_system_params(s), dx) : -1;
        out_printf(r, "%s: nx %d rc %d\n", forms[f], nx, rc);
        out_num(r, ch_system_energy(s));
        for (int i = 0; i < nx && i < 64; i++) out_num(r, x[i]), out_num(r, dx[i]);
        ch_system_free(s);
    }
}

/* load: ch_problem_load armed. */
static void stage_load(const model *m, result *r, long k, int persist)
{
    ch_err e;
    arm(k, persist);
    ch_problem *pb = ch_problem_load(m->path, &e);
    disarm();
    if (!pb) {
        fail_pub(r, &e);
        return;
    }
    probe_problem(pb, r);
    ch_problem_free(pb);
}

/* parse: ch_problem_parse armed. */
static void stage_parse(const model *m, result *r, long k, int persist)
{
    ch_err e;
    arm(k, persist);
    ch_problem *pb = ch_problem_parse(m->file, m->text, m->len, &e);
    disarm();
    if (!pb) {
        fail_pub(r, &e);
        return;
    }
    probe_problem(pb, r);
    ch_problem_free(pb);
}

/* A model derived unarmed, with its document (the caller frees *ctx). */
static ch_derivation *derive_unarmed(const model *m, ch_ctx **ctx)
{
    ch_error e;
    ch_error_clear(&e);
    ch_model *md = NULL;
    ch_mechanics *mech = NULL;
    ch_derivation *d = NULL;
    *ctx = ch_ctx_new();
    if (!*ctx || ch_model_load(*ctx, m->path, &md, &e) ||
        ch_mechanics_derive(*ctx, md, &mech, &e) || ch_derivation_of(mech, &d, &e)) {
        fprintf(stderr, "test_oom: %s: cannot derive unarmed: %s\n", m->file, e.msg);
        exit(2);
    }
    return d;
}

/* emit: all forms into memory, armed, from a derivation made unarmed. */
static void stage_emit(const model *m, result *r, long k, int persist)
{
    ch_ctx *ctx;
    ch_derivation *d = derive_unarmed(m, &ctx);
    ch_error e;
    ch_error_clear(&e);
    r->nmarks = 0;
    arm(k, persist);
    ch_emit_cache *cache = ch_emit_cache_new();
    if (!cache) ch_error_set(&e, CH_ERR_MEMORY, NULL, 0, 0, "out of memory (cache)");
    for (int f = 0; cache && f < 3; f++) {
        ch_buf h, c;
        ch_buf_init(&h);
        ch_buf_init(&c);
        ch_error_clear(&e);
        int rc = ch_emit_c_cached(ctx, d->mech, (ch_form)f, NULL, cache, &h, &c, &e);
        r->marks[r->nmarks++] = A.n;
        if (!rc && (h.oom || c.oom)) { /* an incomplete text handed out: wrong */
            ch_error_clear(&e);
            snprintf(e.msg, sizeof e.msg, "emit returned 0 with an incomplete text");
            rc = -1;
        }
        disarm();
        if (rc && e.code != CH_ERR_MODEL) {
            fail_int(r, &e);
        } else if (rc) {
            out_printf(r, "form %d: error %d %s\n", f, (int)e.code, e.msg);
        } else {
            out_printf(r, "form %d\n", f);
            ch_compile_default_prefix(d->model->name, (ch_form)f, r->prefix[f],
                                      sizeof r->prefix[f]);
            r->h[f] = strdup(h.s);
            r->c[f] = strdup(c.s);
        }
        rearm();
        ch_buf_free(&h);
        ch_buf_free(&c);
        if (r->failed) break;
    }
    if (!cache) fail_int(r, &e);
    ch_emit_cache_free(cache);
    disarm();
    ch_ctx_free(ctx);
}

/* jit: compile the reduced form, integrate and reset, armed, on a problem
 * loaded unarmed. */
static void stage_jit(const model *m, result *r, long k, int persist)
{
    ch_err e;
    ch_problem *pb = ch_problem_load(m->path, &e);
    if (!pb) {
        fprintf(stderr, "test_oom: %s: cannot load unarmed: %s\n", m->file, e.msg);
        exit(2);
    }
    r->nmarks = 0;
    arm(k, persist);
    ch_system *s = ch_system_compile(pb, "reduced", "tcc", &e);
    r->marks[r->nmarks++] = A.n;
    if (!s) {
        disarm();
        fail_pub(r, &e);
    } else {
        int rc = ch_system_integrate(s, 0.05, NULL, 0, &e);
        r->marks[r->nmarks++] = A.n;
        if (!rc) rc = ch_system_reset(s, &e);
        r->marks[r->nmarks++] = A.n;
        disarm();
        if (rc) {
            fail_pub(r, &e);
        } else {
            out_printf(r, "t %a\n", ch_system_time(s));
            for (int i = 0; i < ch_system_nx(s); i++) out_num(r, ch_system_state(s)[i]);
        }
        ch_system_free(s);
    }
    ch_problem_free(pb);
}

/* doc: `chetaev derive` in the four formats into memory (display forms
 * prepared, then written), armed, from a derivation made unarmed. */
static void stage_doc(const model *m, result *r, long k, int persist)
{
    ch_ctx *ctx;
    ch_derivation *d = derive_unarmed(m, &ctx);
    ch_error e;
    ch_error_clear(&e);
    r->nmarks = 0;
    arm(k, persist);
    for (int f = 0; f < 4 && !r->failed; f++) {
        ch_buf b;
        ch_buf_init(&b);
        int rc = ch_derivation_prepare(d, (ch_format)f, 0, NULL)
                     ? (int)ch_error_set(&e, CH_ERR_MEMORY, NULL, 0, 0, "out of memory (prepare)")
                     : ch_derivation_write(&b, d, (ch_format)f, 0, NULL, &e);
        if (!rc && b.oom) rc = ch_error_set(&e, CH_ERR_MEMORY, NULL, 0, 0, "out of memory (buf)");
        r->marks[r->nmarks++] = A.n;
        disarm();
        if (rc) fail_int(r, &e);
        else out_put(r, b.s, b.len);
        rearm();
        ch_buf_free(&b);
    }
    disarm();
    ch_ctx_free(ctx);
}

/* audit: `chetaev check` (the audit, its text and JSON), armed, from a
 * derivation made unarmed. */
static void stage_audit(const model *m, result *r, long k, int persist)
{
    ch_ctx *ctx;
    ch_derivation *d = derive_unarmed(m, &ctx);
    ch_error e;
    ch_error_clear(&e);
    ch_audit a;
    arm(k, persist);
    int rc = ch_audit_run(ctx, d->mech, NULL, &a, &e);
    ch_buf b;
    ch_buf_init(&b);
    if (!rc) {
        ch_audit_write_text(&b, &a, NULL);
        ch_audit_write_json(&b, &a, NULL);
        if (b.oom) rc = ch_error_set(&e, CH_ERR_MEMORY, NULL, 0, 0, "out of memory (buf)");
    }
    disarm();
    if (rc) fail_int(r, &e);
    else out_put(r, b.s, b.len);
    ch_buf_free(&b);
    ch_ctx_free(ctx);
}

/* SEM_N values of an emitted form at its initial state: x, dxdt and the
 * energy (the code compiled by libtcc, not armed); NULL when it does not
 * compile or lacks a function. */
#define SEM_X 64
#define SEM_N (2 * SEM_X + 1)
static double *sem_form(const char *prefix, const char *h, const char *c)
{
    /* the unit the JIT compiles: the emitter's math prelude where the
     * file includes <math.h> */
    (void)h;
    ch_buf src, unit;
    ch_buf_init(&src);
    ch_buf_init(&unit);
    const char *inc = strstr(c, "#include <math.h>\n");
    if (inc) {
        ch_buf_putn(&src, c, (size_t)(inc - c));
        ch_buf_put(&src, ch_driver_math_prelude());
        ch_buf_put(&src, inc + strlen("#include <math.h>\n"));
    } else {
        ch_buf_put(&src, c);
    }
    ch_driver_jit_unit(prefix, src.s ? src.s : "", &unit);
    ch_buf_free(&src);
    ch_jit *j = NULL;
    ch_error e;
    ch_error_clear(&e);
    double *v = NULL;
    if (!unit.oom && !ch_jit_compile(unit.s, CH_COMPILER_TCC, &j, &e)) {
        char name[128];
        snprintf(name, sizeof name, "%s_initial", prefix);
        void (*initial)(double *) = (void (*)(double *))ch_jit_symbol(j, name);
        snprintf(name, sizeof name, "%s_rhs", prefix);
        int (*rhs)(double, const double *, const double *, double *) =
            (int (*)(double, const double *, const double *, double *))ch_jit_symbol(j, name);
        snprintf(name, sizeof name, "%s_energy", prefix);
        double (*energy)(double, const double *, const double *) =
            (double (*)(double, const double *, const double *))ch_jit_symbol(j, name);
        snprintf(name, sizeof name, "%s_param_defaults", prefix);
        const double *p = ch_jit_symbol(j, name);
        if (initial && rhs && energy && p && (v = malloc(SEM_N * sizeof *v))) {
            for (int i = 0; i < SEM_N; i++) v[i] = NAN;
            initial(v);
            rhs(0, v, p, v + SEM_X);
            v[2 * SEM_X] = energy(0, v, p);
        }
    }
    ch_jit_free(j);
    ch_buf_free(&unit);
    return v;
}

/* chart: the knife edge's reduced form without damping, turning at
 * phi' = 1 (compiled unarmed), integrated armed to t = 2, across its
 * chart's singularity at phi = pi/2 (the model derived again in the
 * system's own context, the other chart compiled: chart.h), then on with
 * cvode, then reset to the first chart. */
static void stage_chart(const model *m, result *r, long k, int persist)
{
    ch_err e;
    ch_problem *pb = ch_problem_load(m->path, &e);
    ch_system *s = pb ? ch_system_compile(pb, "reduced", "tcc", &e) : NULL;
    if (!s || ch_system_set_param(s, "c", 0, &e) || ch_system_set_state(s, "phi'", 1, &e)) {
        fprintf(stderr, "test_oom: %s: cannot compile unarmed: %s\n", m->file, e.msg);
        exit(2);
    }
    ch_problem_free(pb);
    r->nmarks = 0;
    arm(k, persist);
    int rc = ch_system_integrate(s, 2, NULL, 0, &e);
    r->marks[r->nmarks++] = A.n;
    if (!rc) rc = ch_system_integrate(s, 2.1, "cvode", 0, &e);
    r->marks[r->nmarks++] = A.n;
    if (!rc) rc = ch_system_reset(s, &e);
    r->marks[r->nmarks++] = A.n;
    disarm();
    if (rc) {
        fail_pub(r, &e);
    } else {
        ch_stats st;
        ch_system_stats(s, &st);
        out_printf(r, "t %a chart %s recharts %ld\n", ch_system_time(s), ch_system_chart(s),
                   st.recharts);
        for (int i = 0; i < ch_system_nx(s); i++) out_num(r, ch_system_state(s)[i]);
    }
    ch_system_free(s);
}

typedef void (*stage_fn)(const model *, result *, long, int);

/* Under AddressSanitizer the runs are about 6 times slower: 6 times the
 * strides, and fewer first k run all. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Difference allowed between the numbers of a successful run and the
 * clean run's, relative to their size or 1 (the values are of order 1: a
 * 0 computed another way may come out as 1e-16). */
#define NUM_TOL 1e-12

static int trace; /* OOM_TRACE: each run named before it starts */
static long only_k; /* OOM_K=K[,once]: that run only (debugging) */
static int only_persist = 1;

static struct {
    long runs, errors, successes, inexact, unchecked, leaks, bad;
} tally;

/* Runs stage for k (persist or once) and checks the outcome against ref. */
static void run_k(const char *name, stage_fn fn, const model *m, const result *ref, long k,
                  int persist, int strict)
{
    result r;
    memset(&r, 0, sizeof r);
    if (trace) fprintf(stderr, "test_oom: %s %s k=%ld %s\n", name, m->file, k, persist ? "on" : "once");
    fn(m, &r, k, persist);
    long injected = A.failed;
    char what[256];
    snprintf(what, sizeof what, "%s %s k=%ld %s", name, m->file, k, persist ? "on" : "once");
    tally.runs++;
    if (!check_no_leak(what)) tally.leaks++, check_failed++, print_site();
    if (r.failed) {
        tally.errors++;
        int ok = r.code == CH_E_MEMORY && r.msg[0] && injected > 0;
        if (!ok) {
            tally.bad++;
            CHECK_MSG(ok, "%s: error %d \"%s\" (%ld failures injected)", what, r.code, r.msg,
                      injected);
            print_site();
        } else {
            check_passed++;
        }
    } else if (!persist && !strict) {
        tally.successes++, tally.unchecked++;
        check_passed++;
    } else {
        tally.successes++;
        int ok = r.outlen == ref->outlen && (!r.outlen || !memcmp(r.out, ref->out, r.outlen))
                 && r.nnum == ref->nnum;
        int exact = ok;
        for (size_t i = 0; ok && i < r.nnum; i++) {
            double a = r.num[i], b = ref->num[i];
            if (a == b || (isnan(a) && isnan(b))) continue;
            exact = 0;
            /* a fallback may compute an equal expression in another
             * form: the last bits may differ */
            ok = fabs(a - b) <= NUM_TOL * (fabs(a) + fabs(b) + 1);
        }
        /* emitted text: the same, or code that computes the same */
        for (int f = 0; ok && f < 3; f++) {
            if (!r.h[f] || (!strcmp(r.h[f], ref->h[f]) && !strcmp(r.c[f], ref->c[f]))) continue;
            exact = 0;
            result *rr = (result *)ref;
            if (!rr->sem[f]) rr->sem[f] = sem_form(ref->prefix[f], ref->h[f], ref->c[f]);
            r.sem[f] = sem_form(r.prefix[f], r.h[f], r.c[f]);
            ok = r.sem[f] && rr->sem[f];
            for (int i = 0; ok && i < SEM_N; i++) {
                double a = r.sem[f][i], b = rr->sem[f][i];
                ok = a == b || (isnan(a) && isnan(b))
                     || fabs(a - b) <= NUM_TOL * (fabs(a) + fabs(b) + 1);
            }
        }
        if (ok && !exact) tally.inexact++;
        if (!ok) {
            tally.bad++;
            CHECK_MSG(ok, "%s: succeeded with other results than the clean run's", what);
            print_site();
            if (getenv("OOM_DIFF")) { /* for diff(1) */
                FILE *f = fopen("oom-ref.txt", "w");
                if (f) {
                    fwrite(ref->out, 1, ref->outlen, f);
                    for (int i = 0; i < 3; i++) fprintf(f, "%s%s", ref->h[i] ? ref->h[i] : "", ref->c[i] ? ref->c[i] : "");
                    fclose(f);
                }
                if ((f = fopen("oom-got.txt", "w"))) {
                    fwrite(r.out, 1, r.outlen, f);
                    for (int i = 0; i < 3; i++) fprintf(f, "%s%s", r.h[i] ? r.h[i] : "", r.c[i] ? r.c[i] : "");
                    fclose(f);
                }
                for (size_t i = 0; i < r.nnum && i < ref->nnum; i++)
                    if (r.num[i] != ref->num[i])
                        fprintf(stderr, "  number %zu: %.17g, want %.17g\n", i, r.num[i],
                                ref->num[i]);
            }
        } else {
            check_passed++;
        }
    }
    result_free(&r);
}

static int near_mark(const result *ref, long k, long edge)
{
    for (int i = 0; i < ref->nmarks; i++)
        if (k + edge > ref->marks[i] && k <= ref->marks[i] + edge) return 1;
    return 0;
}

/* A clean run, then every k (or the stride), in both modes. */
/* Which k run: every k up to ALL_K, then k = ALL_K + 1 + j*stride, and
 * every k within EDGE_K of the end of a part of the stage (ref's marks)
 * and of the last allocation. */
#define ALL_K (SANITIZED ? 60 : 200)
#define EDGE_K 20

static int selected(const result *ref, long n, long k, long stride)
{
    return k <= ALL_K || (k - ALL_K - 1) % stride == 0 || near_mark(ref, k, EDGE_K)
           || k + EDGE_K > n;
}

/* stride_on, stride_once: of the two modes (1: every k); strict: the
 * successes of the k-only mode are compared with the clean run too. */
static void run_stage(const char *name, stage_fn fn, const model *m, long stride_on,
                      long stride_once, int strict)
{
    result ref;
    memset(&ref, 0, sizeof ref);
    double t0 = now();
    check_current = name;
    fn(m, &ref, 0, 0);
    long n = A.n;
    double clean = now() - t0;
    CHECK_MSG(!ref.failed, "%s %s: the clean run failed: %s", name, m->file, ref.msg);
    CHECK_MSG(check_no_leak(name), "%s %s: the clean run leaks", name, m->file);
    CHECK_MSG(n > 0, "%s %s: no allocation counted", name, m->file);
    long before = tally.runs;
    for (int persist = 1; persist >= 0; persist--)
        for (long k = 1; k <= n; k++) {
            if (only_k && (k != only_k || persist != only_persist)) continue;
            if (!only_k && !selected(&ref, n, k, persist ? stride_on : stride_once)) continue;
            run_k(name, fn, m, &ref, k, persist, strict);
        }
    printf("%-5s %-22s %6ld allocations, %6ld runs, %.1f s (clean run %.1f ms)", name, m->file,
           n, tally.runs - before, now() - t0, 1e3 * clean);
    for (int i = 0; i < ref.nmarks; i++) printf("%s%ld", i ? " " : " (parts end at ", ref.marks[i]);
    printf("%s\n", ref.nmarks ? ")" : "");
    fflush(stdout);
    result_free(&ref);
}

/* The wrappers see the library's allocations: a small block (calloc) and
 * a huge-page mapping of ch_mem_alloc, each failing when armed to. */
static void test_mechanism(void)
{
    arm(0, 0);
    void *p = ch_mem_alloc(16);
    CHECK(p && A.n == 1 && A.live == 1);
    ch_mem_free(p, 16);
    CHECK(A.live == 0);
    p = ch_mem_alloc(CH_MEM_HUGE);
    CHECK(p && A.n == 2 && A.mapped >= CH_MEM_HUGE);
    ch_mem_free(p, CH_MEM_HUGE);
    CHECK(A.mapped == 0);
    arm(1, 1);
    CHECK(ch_mem_alloc(16) == NULL && ch_mem_alloc(CH_MEM_HUGE) == NULL && A.failed == 2);
    disarm();
    CHECK(check_no_leak("mechanism"));
}

static void load_model(model *m, const char *file)
{
    m->file = file;
    snprintf(m->path, sizeof m->path, "%s/examples/%s", SRCDIR, file);
    FILE *f = fopen(m->path, "rb");
    if (!f) {
        fprintf(stderr, "test_oom: cannot open %s\n", m->path);
        exit(2);
    }
    char buf[1 << 16];
    m->len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    m->text = malloc(m->len + 1);
    memcpy(m->text, buf, m->len);
}

int main(int argc, char **argv)
{
    const char *bt = getenv("OOM_BT");
    A.bt = bt ? atol(bt) : 0;
    trace = getenv("OOM_TRACE") && atoi(getenv("OOM_TRACE"));
    sites = getenv("OOM_SITES") && atoi(getenv("OOM_SITES"));
    if (getenv("OOM_K")) {
        only_k = atol(getenv("OOM_K"));
        only_persist = !strstr(getenv("OOM_K"), "once");
    }
    int every = getenv("OOM_ALL") && atoi(getenv("OOM_ALL"));
    /* optional filters: test_oom [STAGE [MODEL]] */
    const char *only_stage = argc > 1 ? argv[1] : NULL;
    const char *only_model = argc > 2 ? argv[2] : NULL;
    static const char *const files[] = {"knife_edge.nh", "nonlinear_slope.nh",
                                        "pendulum_xy.nh", "rolling_disk.nh"};
#define NMODELS (int)(sizeof files / sizeof *files)
    model ms[NMODELS];
    for (int i = 0; i < NMODELS; i++) load_model(&ms[i], files[i]);
    double t0 = now();
    RUN(test_mechanism);
    /* the models (bits of files[]) and the strides (from k on, k only) */
    static const struct {
        const char *name;
        stage_fn fn;
        unsigned models;
        long on, once;
        int strict;
    } stages[] = {
        {"load", stage_load, 7, 1, 2, 1},
        {"load", stage_load, 8, 8, 16, 1},
        {"parse", stage_parse, 1, 1, 8, 1},
        {"emit", stage_emit, 7, 1, 10, 1},
        {"jit", stage_jit, 7, 7, 7, 1},
        {"chart", stage_chart, 1, 15, 15, 1},
        {"doc", stage_doc, 7, 1, 8, 0},
        {"audit", stage_audit, 7, 1, 8, 0},
    };
    for (size_t s = 0; s < sizeof stages / sizeof *stages; s++) {
        if (only_stage && strcmp(only_stage, stages[s].name)) continue;
        for (int i = 0; i < NMODELS; i++) {
            if (only_model && strcmp(only_model, files[i])) continue;
            if (!(stages[s].models >> i & 1)) continue;
            long f = every ? 0 : SANITIZED ? 6 : 1;
            run_stage(stages[s].name, stages[s].fn, &ms[i], f ? f * stages[s].on : 1,
                      f ? f * stages[s].once : 1, stages[s].strict);
        }
    }
    printf("%ld runs: %ld errors, %ld successes (%ld not exact: equivalent, %ld not "
           "compared), %ld leaking, %ld wrong; %.1f s\n", tally.runs, tally.errors,
           tally.successes, tally.inexact, tally.unchecked, tally.leaks, tally.bad, now() - t0);
    for (int i = 0; i < NMODELS; i++) free(ms[i].text);
    free(A.set);
    return check_summary("oom");
}
