/* jit.c — libtcc in memory, or the system compiler plus dlopen.
 *
 * Both backends produce a handle from which global symbols are looked up;
 * nothing is printed: tcc's diagnostics go through tcc_set_error_func and
 * cc's stderr is captured into a file in the private directory. */
#define _POSIX_C_SOURCE 200809L
#include "jit/jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libtcc.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- libtcc --------------------------------------------------------- */

/* libtcc keeps process-wide state (its first-use initialisation, the
 * state being compiled): every call that creates, compiles or deletes a
 * TCCState holds this lock, so that separate ch_jit objects can be built
 * from separate threads (chetaev.h). The only global of the library, and
 * it guards a library's globals, not ours. */
static pthread_mutex_t tcc_lock = PTHREAD_MUTEX_INITIALIZER;

/* Collects tcc's messages (errors and warnings) for the ch_error. */
typedef struct {
    char text[480];
    size_t len;
} tcc_log;

struct ch_jit {
    ch_compiler which;
    TCCState *tcc;
    void *dl;
    tcc_log log; /* lives as long as the TCCState that reports into it */
};

static void tcc_collect(void *opaque, const char *msg)
{
    tcc_log *log = opaque;
    size_t room = sizeof log->text - log->len;
    if (room <= 1) return;
    int n = snprintf(log->text + log->len, room, "%s%s",
                     log->len ? "; " : "", msg);
    if (n < 0) return;
    log->len += (size_t)n < room ? (size_t)n : room - 1;
}

/* The library functions emitted code calls (the math functions of the
 * model language and of the solvers, and what tcc itself calls for
 * array initializers), handed to tcc from this process: linking libm
 * and libc the usual way makes tcc read their symbol tables, 0.65 of
 * the knife edge's 0.9 ms of compiling. Code that needs anything else
 * is linked the usual way (compile_tcc's second attempt). */
#define HOST_FNS(X) CH_JIT_MATH_FNS(X) X(memset, ) X(memcpy, ) X(memmove, )

static int add_host_symbols(TCCState *s)
{
    /* function pointers as object pointers: copied, not converted (not
     * an ISO C conversion) */
#define ADD(f, decl) { void (*fp)(void) = (void (*)(void))f; void *a; memcpy(&a, &fp, sizeof a); \
                 if (tcc_add_symbol(s, #f, a) < 0) return -1; }
    HOST_FNS(ADD)
#undef ADD
    return 0;
}

/* Where an attempt of tcc_try failed (TRY_OK: it did not). */
typedef enum {
    TRY_OK, TRY_NO_MEMORY, TRY_NO_OUTPUT, TRY_COMPILE, TRY_SYMBOLS, TRY_LIBM, TRY_LINK
} tcc_stage;

static const char *const stage_msg[] = {
    "", "out of memory", "cannot compile to memory", "compilation failed",
    "cannot add symbols", "cannot link libm", "linking failed"};

/* One attempt, with own_symbols without the C library (-nostdlib) and
 * with the functions of add_host_symbols instead: TRY_OK, or the stage
 * that failed (s deleted, tcc's messages in j->log). */
static tcc_stage tcc_try(const char *source, ch_jit *j, int own_symbols)
{
    TCCState *s = tcc_new();
    if (!s) return TRY_NO_MEMORY;
    tcc_log *log = &j->log;
    log->len = 0, log->text[0] = 0;
    /* Installed first: without it tcc prints to stderr. */
    tcc_set_error_func(s, log, tcc_collect);
    tcc_stage bad = TRY_OK;
    if (own_symbols) tcc_set_options(s, "-nostdlib");
    if (!bad && tcc_set_output_type(s, TCC_OUTPUT_MEMORY) < 0) bad = TRY_NO_OUTPUT;
    if (!bad && tcc_compile_string(s, source) < 0) bad = TRY_COMPILE;
    if (!bad && own_symbols && add_host_symbols(s) < 0) bad = TRY_SYMBOLS;
    if (!bad && !own_symbols && tcc_add_library(s, "m") < 0) bad = TRY_LIBM;
#ifdef TCC_RELOCATE_AUTO
    if (!bad && tcc_relocate(s, TCC_RELOCATE_AUTO) < 0) bad = TRY_LINK;
#else
    if (!bad && tcc_relocate(s) < 0) bad = TRY_LINK;
#endif
    if (bad) {
        tcc_delete(s);
        return bad;
    }
    j->tcc = s;
    return TRY_OK;
}

static int compile_tcc(const char *source, ch_jit *j, ch_error *err)
{
    pthread_mutex_lock(&tcc_lock);
    tcc_stage bad = tcc_try(source, j, 1);
    /* what it could not link with the host's functions alone */
    if (bad == TRY_LINK) bad = tcc_try(source, j, 0);
    pthread_mutex_unlock(&tcc_lock);
    if (!bad) return 0;
    return ch_error_set(err, bad == TRY_NO_MEMORY ? CH_ERR_MEMORY : CH_ERR_MODEL, NULL, 0,
                        0, "tcc: %s%s%s", stage_msg[bad], j->log.len ? ": " : "",
                        j->log.text);
}

/* ---- system cc + dlopen ---------------------------------------------- */

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

/* The first bytes of a file, trailing newlines dropped. */
static void read_head(const char *path, char *out, size_t size)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t n = fread(out, 1, size - 1, f);
    fclose(f);
    out[n] = 0;
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r')) out[--n] = 0;
}

/* Runs argv with stdout and stderr into log_path; the exit status or -1. */
static int run_captured(char *const argv[], const char *log_path, int *spawn_errno)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa)) return -1;
    int rc = posix_spawn_file_actions_addopen(&fa, 1, log_path,
                                              O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    if (!rc) rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        *spawn_errno = rc;
        return -1;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return -1;
}

typedef struct {
    char dir[4096], src[4200], so[4200], log[4200];
} cc_paths;

static int cc_paths_make(cc_paths *p)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    if ((size_t)snprintf(p->dir, sizeof p->dir, "%s/chetaev-jit-XXXXXX", tmp)
        >= sizeof p->dir) {
        errno = ENAMETOOLONG; /* (the message must not say "Success") */
        return -1;
    }
    if (!mkdtemp(p->dir)) return -1;
    snprintf(p->src, sizeof p->src, "%s/unit.c", p->dir);
    snprintf(p->so, sizeof p->so, "%s/unit.so", p->dir);
    snprintf(p->log, sizeof p->log, "%s/cc.log", p->dir);
    return 0;
}

static void cc_paths_remove(const cc_paths *p)
{
    unlink(p->src);
    unlink(p->so);
    unlink(p->log);
    rmdir(p->dir);
}

static int compile_cc(const char *source, ch_jit *j, ch_error *err)
{
    cc_paths p;
    if (cc_paths_make(&p))
        return ch_error_set(err, CH_ERR_IO, NULL, 0, 0,
                            "cc: cannot create a temporary directory: %s",
                            strerror(errno));
    int rc = 0;
    if (write_file(p.src, source)) {
        rc = ch_error_set(err, CH_ERR_IO, NULL, 0, 0, "cc: cannot write %s: %s",
                          p.src, strerror(errno));
        goto done;
    }
    char *argv[] = {"cc", "-O2", "-shared", "-fPIC", "-o", p.so, p.src, "-lm", NULL};
    int spawn_errno = 0;
    int status = run_captured(argv, p.log, &spawn_errno);
    if (status != 0) {
        char msg[400];
        read_head(p.log, msg, sizeof msg);
        if (spawn_errno)
            rc = ch_error_set(err, CH_ERR_IO, NULL, 0, 0,
                              "cc: cannot run the system compiler: %s",
                              strerror(spawn_errno));
        else
            rc = ch_error_set(err, CH_ERR_MODEL, NULL, 0, 0,
                              "cc: compilation failed%s%s", msg[0] ? ": " : "", msg);
        goto done;
    }
    j->dl = dlopen(p.so, RTLD_NOW | RTLD_LOCAL);
    if (!j->dl) {
        const char *e = dlerror();
        rc = ch_error_set(err, CH_ERR_IO, NULL, 0, 0, "cc: dlopen failed: %s",
                          e ? e : "unknown error");
    }
done:
    /* The mapping survives unlinking: nothing is left on disk. */
    cc_paths_remove(&p);
    return rc;
}

/* ---- handle --------------------------------------------------------- */

int ch_jit_compile(const char *source, ch_compiler which, ch_jit **out,
                   ch_error *err)
{
    *out = NULL;
    ch_jit *j = calloc(1, sizeof *j);
    if (!j) return ch_error_set(err, CH_ERR_MEMORY, NULL, 0, 0, "out of memory");
    j->which = which;
    int rc = which == CH_COMPILER_TCC ? compile_tcc(source, j, err)
                                      : compile_cc(source, j, err);
    if (rc) {
        free(j);
        return rc;
    }
    *out = j;
    return 0;
}

void *ch_jit_symbol(ch_jit *j, const char *name)
{
    if (!j) return NULL;
    if (j->tcc) return tcc_get_symbol(j->tcc, name);
    if (j->dl) return dlsym(j->dl, name);
    return NULL;
}

void ch_jit_free(ch_jit *j)
{
    if (!j) return;
    if (j->tcc) {
        pthread_mutex_lock(&tcc_lock);
        tcc_delete(j->tcc);
        pthread_mutex_unlock(&tcc_lock);
    }
    if (j->dl) dlclose(j->dl);
    free(j);
}
