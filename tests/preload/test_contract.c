/* The differential contract test: contract_corpus (thousands of valid and
 * invalid calls of every hooked entry point) on the emulator without the
 * shim, then under it in several settings; every case must give the same
 * status and the same sticky state of the context, and the same bytes
 * wherever the shim must not change them.
 *
 * usage: test_contract PROGRAM LIBAMPSHIM EMU_DIR [PROGRAM ARGS...]
 *
 * Bytes (the hash of the whole device arena after the call) must be equal
 * in every case under the settings whose results are FP32 bit for bit
 * (shadow, the default policy, which keeps these small calls FP32,
 * AMPSHIM_DISABLE). Under a converting mode they must be equal for every
 * call the vendor refused and every trivial one (nothing multiplied); an
 * accepted call that multiplies may differ in bytes there (its error
 * bound is the business of preload_suite and preload_conv_modes), so its
 * bytes are not compared. Last, the refused cuBLASLt workspaces and
 * graph-API packs alone under fp16: each is counted as kept FP32, none as
 * a converted call that fell back. */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_TIMEOUT_S 300
#define MAX_SHOWN 10

struct setting {
    const char *name;
    const char *var, *value; /* one AMPSHIM_* variable, or NULL */
    int exact;               /* every case's bytes must be equal */
    int summary;             /* the shim's summary on stderr */
};

static const struct setting settings[] = {
    {"shadow", "AMPSHIM_MODE", "shadow", 1, 0},
    {"shadow:bf16", "AMPSHIM_MODE", "shadow:bf16", 1, 0},
    {"default policy", NULL, NULL, 1, 0},
    {"disable", "AMPSHIM_DISABLE", "1", 1, 0},
    {"fp16", "AMPSHIM_MODE", "fp16", 0, 0},
    {"bf16", "AMPSHIM_MODE", "bf16", 0, 0},
    {"tf32", "AMPSHIM_MODE", "tf32", 0, 0},
    {"fp16x3", "AMPSHIM_MODE", "fp16x3", 0, 0},
    {"tf32x3", "AMPSHIM_MODE", "tf32x3", 0, 0},
    {"allow-conversion", "AMPSHIM_MODE", "allow-conversion", 0, 0},
};
#define N_SETTINGS ((int)(sizeof(settings) / sizeof(settings[0])))

/* One printed case; the strings point into the run's output. */
struct ccase {
    long id;
    char api[64];
    int status, sync, last, peek, trivial;
    char hash[20];
    const char *args;       /* to the end of the line */
    int args_len;
};

struct corpus {
    struct ccase *cases;
    int count;
};

/* Parses every "case ..." line of out; -1 on a malformed one. */
static int
corpus_parse(const char *out, struct corpus *c)
{
    const char *line = out;
    int cap = 0;

    c->cases = NULL;
    c->count = 0;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        const char *args;
        struct ccase *k;
        int reset;

        if (strncmp(line, "case ", 5) == 0) {
            if (c->count == cap) {
                cap = cap ? 2 * cap : 4096;
                c->cases = realloc(c->cases, (size_t)cap * sizeof(*k));
                if (!c->cases)
                    return -1;
            }
            k = &c->cases[c->count];
            if (sscanf(line,
                       "case %ld api=%63s status=%d sync=%d last=%d "
                       "peek=%d hash=%19s trivial=%d reset=%d",
                       &k->id, k->api, &k->status, &k->sync, &k->last,
                       &k->peek, k->hash, &k->trivial, &reset) != 9)
                return -1;
            args = strstr(line, " args=");
            if (!args || (end && args > end))
                return -1;
            k->args = args + 6;
            k->args_len = end ? (int)(end - k->args) : (int)strlen(k->args);
            c->count++;
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* What differs between the plain case p and the shim's case s under
 * setting t, into why; 0 when nothing does. */
static int
case_differs(const struct ccase *p, const struct ccase *s,
             const struct setting *t, char *why, size_t len)
{
    int compare_bytes = t->exact || p->status != 0 || p->trivial;

    if (p->id != s->id || strcmp(p->api, s->api) != 0)
        snprintf(why, len, "a different case (%ld %s)", s->id, s->api);
    else if (p->status != s->status)
        snprintf(why, len, "status %d, without the shim %d", s->status,
                 p->status);
    else if (p->sync != s->sync || p->last != s->last || p->peek != s->peek)
        snprintf(why, len,
                 "sticky state sync=%d last=%d peek=%d, without the shim "
                 "sync=%d last=%d peek=%d",
                 s->sync, s->last, s->peek, p->sync, p->last, p->peek);
    else if (compare_bytes && strcmp(p->hash, s->hash) != 0)
        snprintf(why, len, "output bytes hash=%s, without the shim hash=%s",
                 s->hash, p->hash);
    else
        return 0;
    return 1;
}

static int
run_program(char **argv, const char *emu_dir, const char *lib,
            const struct setting *t, struct amp_test_run *run)
{
    struct amp_test_env env;
    int rc;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (t) {
        amp_test_env_set(&env, "LD_PRELOAD", lib);
        amp_test_env_set(&env, "AMPSHIM_REPORT", "off");
        amp_test_env_set(&env, "AMPSHIM_SUMMARY", t->summary ? "1" : "0");
        if (t->var)
            amp_test_env_set(&env, t->var, t->value);
    }
    rc = amp_test_run(argv, &env, RUN_TIMEOUT_S, run);
    amp_test_env_free(&env);
    if (rc != 0) {
        fprintf(stderr, "cannot start %s: %s\n", argv[0], strerror(errno));
        return -1;
    }
    if (!run->exited || run->code != 0) {
        amp_test_run_dump(t ? t->name : "without the shim", run);
        fprintf(stderr, "%s: the program did not finish with status 0\n",
                t ? t->name : "without the shim");
        return -1;
    }
    return 0;
}

/* The calls the vendor refuses are counted as kept FP32, never as a
 * converted call that fell back: the program's refused cuBLASLt
 * workspaces and graph-API packs alone (--gemm 0 --conv 0 --lt 0) under
 * fp16, with the summary on. Each API's refused cases (status != 0
 * without the shim) must be among its FP32 calls, and none may fall
 * back. 0 when so. */
static int
check_refusals_counted(const char *prog, const char *lib,
                       const char *emu_dir)
{
    static const char *const apis[] = {"cublasLtMatmul",
                                       "cudnnBackendExecute"};
    static const struct setting fp16_summary = {"fp16, summary",
                                                "AMPSHIM_MODE", "fp16", 0, 1};
    char *argv[] = {(char *)prog, (char *)"--gemm", (char *)"0",
                    (char *)"--conv", (char *)"0", (char *)"--lt",
                    (char *)"0", NULL};
    struct amp_test_run plain_run, run;
    struct amp_test_summary sum;
    struct corpus plain;
    int bad = 0;

    if (run_program(argv, emu_dir, lib, NULL, &plain_run) != 0)
        return 1;
    if (corpus_parse(plain_run.out, &plain) != 0) {
        amp_test_run_free(&plain_run);
        return 1;
    }
    if (run_program(argv, emu_dir, lib, &fp16_summary, &run) != 0) {
        free(plain.cases);
        amp_test_run_free(&plain_run);
        return 1;
    }
    amp_test_parse_summary(run.err, &sum);
    for (size_t a = 0; a < sizeof(apis) / sizeof(apis[0]); a++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(&sum, apis[a]);
        long refused = 0;

        for (int i = 0; i < plain.count; i++)
            refused += strcmp(plain.cases[i].api, apis[a]) == 0 &&
                       plain.cases[i].status != 0;
        if (!l || refused == 0 || l->fallback != 0 || l->fp32 < refused) {
            printf("REFUSALS %s: %ld refused without the shim; under fp16 "
                   "fp32=%ld fallback=%ld (want every refusal kept FP32, "
                   "none fallen back)\n", apis[a], refused, l ? l->fp32 : -1,
                   l ? l->fallback : -1);
            bad = 1;
        }
    }
    if (bad)
        amp_test_run_dump("refusals", &run);
    free(plain.cases);
    amp_test_run_free(&plain_run);
    amp_test_run_free(&run);
    return bad;
}

int
main(int argc, char **argv)
{
    struct amp_test_run plain_run;
    struct corpus plain;
    char **prog_argv;
    long differences = 0;
    int failed = 0;

    if (argc < 4) {
        fprintf(stderr, "usage: test_contract PROGRAM LIBAMPSHIM EMU_DIR "
                "[ARGS...]\n");
        return 2;
    }
    /* The program and its own arguments. */
    prog_argv = calloc((size_t)argc, sizeof(*prog_argv));
    if (!prog_argv)
        return 2;
    prog_argv[0] = argv[1];
    for (int i = 4; i < argc; i++)
        prog_argv[i - 3] = argv[i];

    if (run_program(prog_argv, argv[3], argv[2], NULL, &plain_run) != 0)
        return 1;
    if (corpus_parse(plain_run.out, &plain) != 0 || plain.count == 0) {
        amp_test_run_dump("without the shim", &plain_run);
        fprintf(stderr, "without the shim: no cases parsed\n");
        return 1;
    }
    for (int t = 0; t < N_SETTINGS; t++) {
        const struct setting *set = &settings[t];
        struct amp_test_run run;
        struct corpus shim;
        long here = 0;

        if (run_program(prog_argv, argv[3], argv[2], set, &run) != 0) {
            failed = 1;
            continue;
        }
        if (corpus_parse(run.out, &shim) != 0 ||
            shim.count != plain.count) {
            fprintf(stderr, "%s: %d cases parsed, %d without the shim\n",
                    set->name, shim.count, plain.count);
            amp_test_run_dump(set->name, &run);
            failed = 1;
        }
        for (int i = 0; i < plain.count && i < shim.count; i++) {
            char why[256];

            if (!case_differs(&plain.cases[i], &shim.cases[i], set, why,
                              sizeof(why)))
                continue;
            if (here++ < MAX_SHOWN)
                printf("DIFFERENCE case %ld %s, setting %s: %s; args=%.*s\n",
                       plain.cases[i].id, plain.cases[i].api, set->name, why,
                       plain.cases[i].args_len, plain.cases[i].args);
        }
        if (here > MAX_SHOWN)
            printf("setting %s: %ld more differences\n", set->name,
                   here - MAX_SHOWN);
        differences += here;
        free(shim.cases);
        amp_test_run_free(&run);
    }
    printf("contract corpus: %d cases x %d settings, %ld differences\n",
           plain.count, N_SETTINGS, differences);
    if (check_refusals_counted(argv[1], argv[2], argv[3]) != 0)
        failed = 1;
    else
        printf("refused cuBLASLt workspaces and graph packs: counted FP32 "
               "under fp16, none fallen back\n");
    free(plain.cases);
    amp_test_run_free(&plain_run);
    free(prog_argv);
    return failed || differences != 0 ? 1 : 0;
}
