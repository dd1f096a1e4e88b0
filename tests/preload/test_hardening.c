/* Hardening tests: the fault matrix (every hooked API the example programs
 * call x every fault the emulator can inject on its converted path gives
 * the FP32 call's bytes and status, and leaves no device memory behind),
 * a fault at each launch of one converted call (its FP32 bytes, bit for
 * bit, and its status), concurrency (thread_check: many threads, own and shared handles, fork,
 * exit under running threads, no CUDA at all) and bad input (every
 * AMPSHIM_* variable with bad values, broken policy files).
 *
 * usage: test_hardening matrix|launches LIBAMPSHIM EMU_DIR GEMM_SUITE
 *                              LEGACY_SGEMM CONV_CHECK LT_CHECK
 *        test_hardening threads|fork|exit|nocuda LIBAMPSHIM EMU_DIR
 *                              THREAD_CHECK
 *        test_hardening env|policy LIBAMPSHIM EMU_DIR SGEMM_CHECK */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include "expect.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Generous: a sanitized build on one shared core. */
#define RUN_TIMEOUT_S 300

static const char *libampshim_path, *emu_dir;
static const char *programs[4];
static int nprograms;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Runs argv on the emulator, with the shim if preload (AMPSHIM_MODE=mode
 * unless mode is NULL), plus NAME, VALUE pairs (NULL-terminated). */
static void
run_argv(char *const argv[], int preload, const char *mode,
         struct amp_test_run *run, ...)
{
    struct amp_test_env env;
    const char *name;
    va_list ap;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    if (preload) {
        amp_test_env_set(&env, "LD_PRELOAD", libampshim_path);
        if (mode)
            amp_test_env_set(&env, "AMPSHIM_MODE", mode);
    }
    va_start(ap, run);
    while ((name = va_arg(ap, const char *)) != NULL)
        amp_test_env_set(&env, name, va_arg(ap, const char *));
    va_end(ap);
    if (amp_test_run(argv, &env, RUN_TIMEOUT_S, run) != 0)
        fail_msg("cannot start %s: %s", argv[0], strerror(errno));
    amp_test_env_free(&env);
}

static void
parse_cases(const struct amp_test_run *run, struct amp_test_check *check,
            const char *what)
{
    if (amp_test_parse_check(run->out, check) == 0 && check->count > 0 &&
        check->have_result)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: the program's output does not parse", what);
}

/* The summary lines of process pid alone. */
static void
summary_of(const char *text, int pid, struct amp_test_summary *sum)
{
    char prefix[32], *mine = calloc(1, strlen(text) + 1);
    const char *line = text;
    size_t used = 0;

    assert_non_null(mine);
    snprintf(prefix, sizeof(prefix), "ampshim[%d]: ", pid);
    while (line && *line) {
        const char *next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) + 1 : strlen(line);

        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            memcpy(mine + used, line, len);
            used += len;
        }
        line = next ? next + 1 : NULL;
    }
    amp_test_parse_summary(mine, sum);
    free(mine);
}

/* ---- The fault matrix ------------------------------------------------------ */

/* A fault, and the converted paths it reaches: every one of them must then
 * fall back ("*": every API; a prefix of the API's step function), or
 * NULL: the path may survive it (a timing event), in which case the call
 * counts as converted and stays within the FP16 bound. */
struct fault {
    const char *spec;
    const char *library; /* "cublas", "cudnn", "cublaslt" or NULL for every
                            program */
    const char *falls_back;
    const char *mode;    /* AMPSHIM_MODE; NULL: fp16 */
};

/* A vendor step that fails after writing part of its output, in each mode
 * whose step can write the caller's memory (fp16, bf16 and tf32 GEMMs, tf32
 * and allow-conversion convolutions) and in fp16 for the convolutions: the programs' calls with
 * beta != 0 must still get the FP32 call's bytes. */
#define PARTIAL_GEMM(fn)                                                     \
    { fn ":1+:partial", "cublas", fn, "fp16" },                              \
    { fn ":1+:partial", "cublas", fn, "bf16" },                              \
    { fn ":1+:partial", "cublas", fn, "tf32" }
#define PARTIAL_LT(fn)                                                       \
    { fn ":1+:partial", "cublaslt", fn, "fp16" },                            \
    { fn ":1+:partial", "cublaslt", fn, "bf16" },                            \
    { fn ":1+:partial", "cublaslt", fn, "tf32" }
#define PARTIAL_CONV(fn)                                                     \
    { fn ":1+:partial", "cudnn", fn, "tf32" },                               \
    { fn ":1+:partial", "cudnn", fn, "allow-conversion" },                   \
    { fn ":1+:partial", "cudnn", fn, "fp16" }

static const struct fault faults[] = {
    /* Scratch, outside a capture and in one. */
    { "alloc-async:1+,user-object:1+", NULL, "*", NULL },
    { "module:1+", NULL, "*", NULL },
    { "launch:1+", NULL, "*", NULL },
    { "launch:2+", NULL, "*", NULL },
    { "event:1+", NULL, NULL, NULL },
    { "cublasCreate_v2:2+", "cublas", NULL, NULL },
    { "cublasGemmEx:1+", "cublas", "cublasGemmEx", NULL },
    { "cublasGemmEx:1+:15", "cublas", "cublasGemmEx", NULL },
    { "cublasGemmStridedBatchedEx:1+", "cublas",
      "cublasGemmStridedBatchedEx", NULL },
    { "cublasGemmStridedBatchedEx:1+:15", "cublas",
      "cublasGemmStridedBatchedEx", NULL },
    { "cublasGemmBatchedEx:1+", "cublas", "cublasGemmBatchedEx", NULL },
    { "cublasGemmBatchedEx:1+:15", "cublas", "cublasGemmBatchedEx", NULL },
    { "cudnnCreate:2+", "cudnn", NULL, NULL },
    { "cudnnConvolutionForward:1+", "cudnn", "cudnnConvolutionForward",
      NULL },
    { "cudnnConvolutionForward:1+:3000", "cudnn",
      "cudnnConvolutionForward", NULL },
    { "cudnnConvolutionBackwardData:1+", "cudnn",
      "cudnnConvolutionBackwardData", NULL },
    { "cudnnConvolutionBackwardData:1+:3000", "cudnn",
      "cudnnConvolutionBackwardData", NULL },
    { "cudnnConvolutionBackwardFilter:1+", "cudnn",
      "cudnnConvolutionBackwardFilter", NULL },
    { "cudnnConvolutionBackwardFilter:1+:3000", "cudnn",
      "cudnnConvolutionBackwardFilter", NULL },
    /* The algorithm and workspace of the shim's own descriptors. */
    { "cudnnGetConvolutionForwardAlgorithm_v7:1+", "cudnn",
      "cudnnConvolutionForward", NULL },
    { "cudnnGetConvolutionBackwardDataAlgorithm_v7:1+", "cudnn",
      "cudnnConvolutionBackwardData", NULL },
    { "cudnnGetConvolutionBackwardFilterAlgorithm_v7:1+", "cudnn",
      "cudnnConvolutionBackwardFilter", NULL },
    { "cudnnGetConvolutionForwardWorkspaceSize:1+", "cudnn",
      "cudnnConvolutionForward", NULL },
    { "cudnnGetConvolutionBackwardDataWorkspaceSize:1+", "cudnn",
      "cudnnConvolutionBackwardData", NULL },
    { "cudnnGetConvolutionBackwardFilterWorkspaceSize:1+", "cudnn",
      "cudnnConvolutionBackwardFilter", NULL },
    PARTIAL_GEMM("cublasGemmEx"),
    PARTIAL_GEMM("cublasGemmStridedBatchedEx"),
    PARTIAL_GEMM("cublasGemmBatchedEx"),
    /* cuBLASLt: the shim's handle, its products, the heuristics it asks
     * for its own descriptors, the check of the program's algorithm. */
    { "cublasLtCreate:2+", "cublaslt", NULL, NULL },
    { "cublasLtMatmul:1+", "cublaslt", "cublasLtMatmul", NULL },
    { "cublasLtMatmul:1+:15", "cublaslt", "cublasLtMatmul", NULL },
    { "cublasLtMatmul:1+", "cublaslt", "cublasLtMatmul", "fp16x3" },
    { "cublasLtMatmulAlgoGetHeuristic:1+", "cublaslt", "cublasLtMatmul",
      NULL },
    /* A call without an algorithm is checked with the heuristics: it
     * may convert. */
    { "cublasLtMatmulAlgoCheck:1+", "cublaslt", NULL, NULL },
    PARTIAL_LT("cublasLtMatmul"),
    PARTIAL_CONV("cudnnConvolutionForward"),
    PARTIAL_CONV("cudnnConvolutionBackwardData"),
    PARTIAL_CONV("cudnnConvolutionBackwardFilter"),
};

/* The Ex GEMM (or the convolution) a converted call of api issues. */
static const char *
step_function(const char *api)
{
    if (strncmp(api, "cudnn", 5) == 0 || strncmp(api, "cublasLt", 8) == 0)
        return api;
    if (strstr(api, "Strided"))
        return "cublasGemmStridedBatchedEx";
    if (strstr(api, "Batched"))
        return "cublasGemmBatchedEx";
    return "cublasGemmEx";
}

static int
must_fall_back(const struct fault *f, const char *api)
{
    return f->falls_back && (strcmp(f->falls_back, "*") == 0 ||
                             strcmp(f->falls_back, step_function(api)) == 0);
}

/* The shim's records (src/device/device.h: AMP_DEV_RECORDS records of
 * AMP_DEV_RECORD_BYTES), device memory an FP16 GEMM makes once per
 * context and keeps for the context's life: what may stay at exit beside
 * what the program itself left. */
#define SHIM_RECORD_BYTES (256 * 64)

/* "ampshim-emu: device memory at exit: N bytes": N, or -1. */
static long
device_at_exit(const struct amp_test_run *run)
{
    const char *line = strstr(run->err, "device memory at exit: ");
    long bytes = -1;

    if (line)
        sscanf(line, "device memory at exit: %ld bytes", &bytes);
    return bytes;
}

struct matrix_count {
    int cells, held;
};

/* Every API of the program's converted cases under one fault: one cell
 * each. Judged against the program without the shim under the same fault
 * (the program's own calls of a faulted function fail there too). */
static void
matrix_program(const char *program, const struct fault *f,
               struct matrix_count *count)
{
    const char *mode = f->mode ? f->mode : "fp16";
    /* The programs' bound for a mode: allow-conversion rounds to FP16. */
    const char *tol = strcmp(mode, "allow-conversion") == 0 ? "fp16" : mode;
    char *argv[] = { (char *)program, (char *)"--tol", (char *)tol, NULL };
    struct amp_test_run base, run;
    struct amp_test_check bc, rc;
    struct amp_test_summary sum;
    char apis[AMP_TEST_MAX_CASES][64];
    int napis = 0;
    long base_dev, run_dev;

    run_argv(argv, 0, NULL, &base, "AMPSHIM_EMU_FAIL", f->spec,
             "AMPSHIM_EMU_MEMCHECK", "1", NULL);
    run_argv(argv, 1, mode, &run, "AMPSHIM_EMU_FAIL", f->spec,
             "AMPSHIM_EMU_MEMCHECK", "1", NULL);
    if (amp_test_parse_check(base.out, &bc) != 0 ||
        amp_test_parse_check(run.out, &rc) != 0) {
        amp_test_run_dump("without the shim", &base);
        amp_test_run_dump("with the shim", &run);
        fail_msg("%s under %s: a case line does not parse", program,
                 f->spec);
    }
    summary_of(run.err, (int)run.pid, &sum);
    base_dev = device_at_exit(&base);
    run_dev = device_at_exit(&run);
    for (int i = 0; i < bc.count; i++) {
        int seen = 0;

        if (strcmp(bc.cases[i].cls, "gemm") != 0 &&
            strcmp(bc.cases[i].cls, "conv") != 0)
            continue;
        for (int j = 0; j < napis; j++)
            seen |= strcmp(apis[j], bc.cases[i].api) == 0;
        if (!seen)
            snprintf(apis[napis++], sizeof(apis[0]), "%s", bc.cases[i].api);
    }
    for (int j = 0; j < napis; j++) {
        const struct amp_test_summary_line *l =
            amp_test_summary_find(&sum, apis[j]);
        int fall = must_fall_back(f, apis[j]);
        int converted = l ? (int)l->converted : -1;
        const char *why = NULL;

        count->cells++;
        if (!run.exited || !base.exited || run.code != base.code ||
            run.timed_out)
            why = "exit status differs from the run without the shim";
        else if (rc.count != bc.count)
            why = "not the same cases";
        else if (strstr(run.err, "Sanitizer"))
            why = "a sanitizer's report (a leak, an invalid access)";
        else if (base_dev < 0 || (run_dev != base_dev &&
                                  run_dev != base_dev + SHIM_RECORD_BYTES))
            why = "device memory at exit differs";
        else if (fall && converted != 0)
            why = "calls counted converted under the fault";
        for (int i = 0; !why && i < bc.count; i++) {
            const struct amp_test_case *b = &bc.cases[i], *c = &rc.cases[i];

            if (strcmp(b->api, apis[j]) != 0)
                continue;
            if (strcmp(b->name, c->name) != 0 || b->status != c->status)
                why = "a case's status differs";
            else if (strcmp(b->hash, c->hash) != 0 &&
                     (fall || converted <= 0 || !c->ok))
                why = "a case is not the FP32 call's bytes";
        }
        if (!why) {
            count->held++;
            continue;
        }
        printf("cell %s x %s (%s): %s\n", apis[j], f->spec, mode, why);
        amp_test_run_dump("without the shim", &base);
        amp_test_run_dump("with the shim", &run);
    }
    amp_test_run_free(&base);
    amp_test_run_free(&run);
}

static void
test_fault_matrix(void **state)
{
    static const char *const library[] = { "cublas", "cublas", "cudnn",
                                           "cublaslt" };
    struct matrix_count count = { 0, 0 };

    for (size_t i = 0; i < COUNT(faults); i++)
        for (int p = 0; p < nprograms; p++)
            if (!faults[i].library ||
                strcmp(faults[i].library, library[p]) == 0)
                matrix_program(programs[p], &faults[i], &count);
    printf("fault matrix: %d cells (hooked API x injected fault), %d held\n",
           count.cells, count.held);
    /* 18 gemm_suite APIs, legacy cublasSgemm, 3 convolutions,
     * cublasLtMatmul. */
    assert_true(count.cells >= 23 * 5);
    assert_int_equal(count.held, count.cells);
}

/* ---- A fault at every launch of one converted call -------------------------- */

/* The launches of a converted call lie before and after its vendor call
 * (scales, casts; the check, the output cast, fp16x3's and tf32x3's sum,
 * shadow's error). A policy converts exactly one call;
 * AMPSHIM_EMU_FAIL=launch:N then fails its Nth launch alone, for N = 1, 2, ... until N is past its
 * last launch. While N is one of its launches the call falls back: the
 * caller gets the FP32 call's bytes and status, bit for bit; past them it
 * converts. A shadow call's output is FP32 whatever fails. */

#define LAUNCH_FAULTS_MAX 10

struct launch_case {
    int program;                 /* index into programs[] */
    const char *api;
    const char *const *modes;
};

static const char *const gemm_modes[] = {
    "fp16", "bf16", "tf32", "fp16x3", "tf32x3", "shadow:fp16",
    "shadow:fp16x3", "shadow:tf32x3", NULL,
};
static const char *const conv_modes[] = {
    "fp16", "bf16", "tf32", "allow-conversion", "tf32x3", "shadow:fp16",
    "shadow:tf32x3", NULL,
};

static const struct launch_case launch_cases[] = {
    { 0, "cublasSgemm_v2", gemm_modes },
    { 0, "cublasSgemmStridedBatched", gemm_modes },
    { 0, "cublasSgemmBatched", gemm_modes },
    { 2, "cudnnConvolutionForward", conv_modes },
    { 2, "cudnnConvolutionBackwardData", conv_modes },
    { 2, "cudnnConvolutionBackwardFilter", conv_modes },
    { 3, "cublasLtMatmul", gemm_modes },
};

static void
write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* Every case's status as in base; with `exact`, its bytes too, else its
 * own check passed. NULL when so, else why not. */
static const char *
launch_cell_why(const struct amp_test_run *base, const struct amp_test_check *bc,
                const struct amp_test_run *run, const struct amp_test_check *rc,
                int exact)
{
    if (!run->exited || run->code != base->code || run->timed_out)
        return "exit status differs from the run without the shim";
    if (rc->count != bc->count)
        return "not the same cases";
    for (int i = 0; i < bc->count; i++) {
        const struct amp_test_case *b = &bc->cases[i], *c = &rc->cases[i];

        if (strcmp(b->name, c->name) != 0 || b->status != c->status)
            return "a case's status differs";
        if (exact && strcmp(b->hash, c->hash) != 0)
            return "a case is not the FP32 call's bytes";
        if (!exact && !c->ok)
            return "a case failed its own check";
    }
    return NULL;
}

static void
test_fault_every_launch(void **state)
{
    char dir[] = "/tmp/ampshim-launch-XXXXXX", policy[128], text[256];
    int inside_total = 0;

    assert_non_null(mkdtemp(dir));
    snprintf(policy, sizeof(policy), "%s/one.policy", dir);
    for (size_t c = 0; c < COUNT(launch_cases); c++) {
        const struct launch_case *lc = &launch_cases[c];
        for (const char *const *mode = lc->modes; *mode; mode++) {
            int shadow = strncmp(*mode, "shadow", 6) == 0;
            int inside = 0, past = 0;
            /* The programs' own checks: bf16's bound is the wider. */
            char *argv[] = { (char *)programs[lc->program], (char *)"--tol",
                             strcmp(*mode, "bf16") == 0 ? (char *)"bf16"
                                                        : (char *)"fp16",
                             NULL };
            struct amp_test_run base;
            struct amp_test_check bc;

            run_argv(argv, 0, NULL, &base, NULL);
            parse_cases(&base, &bc, "without the shim");

            snprintf(text, sizeof(text),
                     "rule %s when symbol %s and call == 1\ndefault fp32\n",
                     *mode, lc->api);
            write_file(policy, text);
            for (int n = 0; n <= LAUNCH_FAULTS_MAX; n++) {
                struct amp_test_run run;
                struct amp_test_check rc;
                struct amp_test_summary sum;
                const struct amp_test_summary_line *l;
                char fault[32];
                long converted = 0;
                const char *why;
                int fell;

                /* n 0: no fault. */
                snprintf(fault, sizeof(fault), "launch:%d", n > 0 ? n : 999);
                run_argv(argv, 1, NULL, &run, "AMPSHIM_POLICY", policy,
                         "AMPSHIM_EMU_FAIL", fault, NULL);
                parse_cases(&run, &rc, lc->api);
                summary_of(run.err, (int)run.pid, &sum);
                for (int i = 0; i < sum.count; i++)
                    converted += sum.lines[i].converted;
                l = amp_test_summary_find(&sum, lc->api);
                fell = l ? (int)l->fallback : -1;
                if (n == 0 && (!l || converted != 1 || fell != 0)) {
                    amp_test_run_dump(text, &run);
                    fail_msg("%s %s: the policy converts %ld calls, not one",
                             lc->api, *mode, converted);
                }
                /* Falling back, the call is FP32; past its launches it
                 * converts, and stays converted for later N. */
                if (fell == 1 && (past || converted != 0))
                    why = "a fault past the call's launches made it fall back";
                else if (fell != 1 && (fell != 0 || converted != 1))
                    why = "not one call converted or fallen back";
                else
                    why = launch_cell_why(&base, &bc, &run, &rc,
                                          fell == 1 || shadow);
                if (why) {
                    printf("%s under %s, %s: %s\n", lc->api, *mode, fault,
                           why);
                    amp_test_run_dump("without the shim", &base);
                    amp_test_run_dump("with the shim", &run);
                    fail_msg("%s under %s, %s: %s", lc->api, *mode, fault,
                             why);
                }
                if (n > 0 && fell == 1)
                    inside++;
                past |= n > 0 && fell == 0;
                amp_test_run_free(&run);
            }
            printf("%s under %s: launches 1..%d fall back\n", lc->api, *mode,
                   inside);
            /* Only tf32 casts nothing: every other mode launches. */
            if (strcmp(*mode, "tf32") != 0)
                assert_true(inside >= 1);
            assert_true(inside < LAUNCH_FAULTS_MAX);
            inside_total += inside;
            amp_test_run_free(&base);
        }
    }
    printf("launch faults: %d launches of converted calls faulted\n",
           inside_total);
    unlink(policy);
    rmdir(dir);
}

/* ---- Concurrency ---------------------------------------------------------- */

/* thread_check's case lines, in thread order, are the same in a threaded
 * and a serial run of the same mode; shadow and no shim give the FP32
 * bytes. */
static void
run_thread_check(const char *mode, const char *tol, int serial,
                 struct amp_test_run *run)
{
    char *argv[] = { (char *)programs[0], (char *)"--tol", (char *)tol,
                     (char *)"--threads", (char *)"8",
                     serial ? (char *)"--serial" : NULL, NULL };

    run_argv(argv, mode != NULL, mode, run, NULL);
}

static void
expect_same_hashes(const struct amp_test_check *a,
                   const struct amp_test_check *b, const char *what)
{
    assert_int_equal(a->count, b->count);
    for (int i = 0; i < a->count; i++) {
        if (strcmp(a->cases[i].name, b->cases[i].name) == 0 &&
            strcmp(a->cases[i].hash, b->cases[i].hash) == 0)
            continue;
        fail_msg("%s: %s has hash %s, the reference run %s", what,
                 a->cases[i].name, a->cases[i].hash, b->cases[i].hash);
    }
}

/* 8 threads x (own handles and stream, the shared handles) x 10 entry
 * points at once, converted (fp16) and shadow: every result within its
 * bound against its thread's double reference, bytes equal to the same
 * work done serially, every call counted. */
static void
test_threads(void **state)
{
    static const char *const modes[][2] = { { "fp16", "fp16" },
                                            { "shadow", "tf32" } };
    struct amp_test_run plain, run, serial;
    struct amp_test_check pc, rc, sc;

    /* FP32 convolutions with default math are TF32 on the emulated
     * Ampere-or-later GPU, as on a real one. */
    run_thread_check(NULL, "tf32", 0, &plain);
    amp_test_expect_exit(&plain, 0, "thread_check without the shim");
    parse_cases(&plain, &pc, "thread_check without the shim");
    assert_int_equal(pc.count, 8 * 2 * 10);
    for (size_t m = 0; m < COUNT(modes); m++) {
        struct amp_test_summary sum;
        int converted = strcmp(modes[m][0], "fp16") == 0;

        run_thread_check(modes[m][0], modes[m][1], 0, &run);
        run_thread_check(modes[m][0], modes[m][1], 1, &serial);
        amp_test_expect_exit(&run, 0, modes[m][0]);
        amp_test_expect_exit(&serial, 0, modes[m][0]);
        parse_cases(&run, &rc, modes[m][0]);
        parse_cases(&serial, &sc, modes[m][0]);
        expect_same_hashes(&rc, &sc, modes[m][0]);
        if (!converted)
            expect_same_hashes(&rc, &pc, "shadow against no shim");
        else
            for (int i = 0; i < rc.count; i++)
                assert_string_not_equal(rc.cases[i].hash, pc.cases[i].hash);
        amp_test_parse_summary(run.err, &sum);
        assert_int_equal(sum.malformed, 0);
        assert_int_equal(sum.count, 10);
        for (int i = 0; i < sum.count; i++) {
            const struct amp_test_summary_line *l = &sum.lines[i];

            /* 16 workers x 2 rounds each. */
            assert_int_equal(l->calls, 32);
            /* A shadowed call counts as converted (its candidate ran). */
            assert_int_equal(l->converted, 32);
            assert_int_equal(l->fallback, 0);
            if (!converted)
                assert_int_equal(l->shadow, 32);
        }
        amp_test_run_free(&run);
        amp_test_run_free(&serial);
    }
    amp_test_run_free(&plain);
}

/* A fork after the first converted round: the child goes on converting
 * and its summary has its own pid and its own calls (one round); the
 * parent's counts its two rounds, not the child's. */
static void
test_fork(void **state)
{
    char *argv[] = { (char *)programs[0], (char *)"--tol", (char *)"fp16",
                     (char *)"--fork", NULL };
    struct amp_test_run run;
    struct amp_test_check check;
    struct amp_test_summary parent, child;
    const char *line;
    int child_pid = 0;

    run_argv(argv, 1, "fp16", &run, NULL);
    amp_test_expect_exit(&run, 0, "thread_check --fork");
    parse_cases(&run, &check, "thread_check --fork");
    assert_int_equal(check.count, 3 * 2 * 10);
    for (int i = 0; i < check.count; i++)
        assert_true(check.cases[i].ok);
    line = strstr(run.out, "child pid=");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "child pid=%d", &child_pid), 1);
    assert_int_not_equal(child_pid, (int)run.pid);
    assert_non_null(strstr(run.out, "child exit=0"));
    summary_of(run.err, (int)run.pid, &parent);
    summary_of(run.err, child_pid, &child);
    assert_int_equal(parent.count, 10);
    assert_int_equal(child.count, 10);
    for (int i = 0; i < 10; i++) {
        /* One worker with own handles, one on the shared ones. */
        assert_int_equal(parent.lines[i].calls, 4);
        assert_int_equal(parent.lines[i].converted, 4);
        assert_int_equal(child.lines[i].calls, 2);
        assert_int_equal(child.lines[i].converted, 2);
    }
    amp_test_run_free(&run);
}

/* main exits while 8 threads are inside hooks: no signal, no hang, the
 * program's own exit status. */
/* The exit's summary lines and the table after them count the same
 * calls, although other threads were still calling. */
static void
expect_exit_figures_agree(const struct amp_test_run *run, const char *what)
{
    struct amp_test_summary sum;
    const char *total = strstr(run->err, "| total ");
    long calls = 0, table_calls = -1;

    amp_test_parse_summary(run->err, &sum);
    for (int i = 0; i < sum.count; i++)
        calls += sum.lines[i].calls - sum.lines[i].passthrough;
    if (total)
        sscanf(total + strlen("| total "), "%ld", &table_calls);
    if (calls > 0 && table_calls == calls)
        return;
    amp_test_run_dump(what, run);
    fail_msg("%s: the summary lines count %ld calls, the table %ld", what,
             calls, table_calls);
}

static void
test_exit_under_threads(void **state)
{
    char *argv[] = { (char *)programs[0], (char *)"--tol", (char *)"fp16",
                     (char *)"--exit-early", NULL };
    static const char *const modes[] = { "fp16", "shadow" };

    for (size_t m = 0; m < COUNT(modes); m++) {
        struct amp_test_run run;

        run_argv(argv, 1, modes[m], &run, NULL);
        amp_test_expect_exit(&run, 0, modes[m]);
        assert_non_null(strstr(run.out, "exiting with 8 threads running"));
        expect_exit_figures_agree(&run, modes[m]);
        amp_test_run_free(&run);
    }
}

/* A program that never calls CUDA, and a shell: nothing on stdout or
 * stderr, no file anywhere the shim could write one (the working
 * directory, a log file directory). */
static void
test_no_cuda(void **state)
{
    char dir[] = "/tmp/amp-nocuda-XXXXXX";
    char *script, *logs;
    char *sh_argv[] = { (char *)"/bin/sh", (char *)"-c", NULL, NULL };
    struct amp_test_run run;
    DIR *d;
    struct dirent *de;
    int entries = 0;

    assert_non_null(mkdtemp(dir));
    assert_true(asprintf(&logs, "%s/log-%%p.txt", dir) > 0);
    for (int i = 0; i < 2; i++) {
        if (i == 0)
            assert_true(asprintf(&script, "cd %s && exec %s --no-cuda", dir,
                                 programs[0]) > 0);
        else
            assert_true(asprintf(&script, "cd %s && /bin/true", dir) > 0);
        sh_argv[2] = script;
        run_argv(sh_argv, 1, "fp16", &run, "AMPSHIM_LOG_LEVEL", "debug",
                 "AMPSHIM_LOG_FILE", logs, NULL);
        amp_test_expect_exit(&run, 0, script);
        if (run.out_len != 0 || run.err_len != 0) {
            amp_test_run_dump(script, &run);
            fail_msg("%s printed something", script);
        }
        amp_test_run_free(&run);
        free(script);
    }
    d = opendir(dir);
    assert_non_null(d);
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            printf("left behind: %s/%s\n", dir, de->d_name);
            entries++;
        }
    closedir(d);
    assert_int_equal(entries, 0);
    rmdir(dir);
    free(logs);
}

/* ---- Bad input ----------------------------------------------------------- */

static struct amp_test_run sgemm_plain;   /* shim, fp16, nothing else */
static struct amp_test_run sgemm_policy;  /* shim, no AMPSHIM_MODE */
static struct amp_test_run sgemm_fp32;    /* no shim */

static void
run_sgemm(int preload, const char *mode, struct amp_test_run *run,
          const char *name, const char *value)
{
    char *argv[] = { (char *)programs[0], (char *)"--tol", (char *)"fp16",
                     NULL };

    run_argv(argv, preload, mode, run, name, value, NULL);
}

static int
sgemm_setup(void **state)
{
    run_sgemm(1, "fp16", &sgemm_plain, NULL, NULL);
    run_sgemm(1, NULL, &sgemm_policy, NULL, NULL);
    run_sgemm(0, NULL, &sgemm_fp32, NULL, NULL);
    return sgemm_plain.exited && sgemm_plain.code == 0 &&
                   sgemm_policy.exited && sgemm_policy.code == 0 &&
                   sgemm_fp32.exited && sgemm_fp32.code == 0
               ? 0
               : -1;
}

static int
sgemm_teardown(void **state)
{
    amp_test_run_free(&sgemm_plain);
    amp_test_run_free(&sgemm_policy);
    amp_test_run_free(&sgemm_fp32);
    return 0;
}

static void
expect_stdout_of(const struct amp_test_run *run,
                 const struct amp_test_run *base, const char *what)
{
    if (run->out_len == base->out_len &&
        memcmp(run->out, base->out, run->out_len) == 0)
        return;
    amp_test_run_dump("reference", base);
    amp_test_run_dump(what, run);
    fail_msg("%s: results differ from the run without the variable", what);
}

/* A value of 100,000 characters; non-printing bytes and format
 * directives. */
static char huge_value[100001];
static const char garbage_value[] = "\x01\x7f%n%s%99999999d\xff\xfe";

/* Every variable the shim reads (src/config.c, src/policy_find.c,
 * src/log.c), the accepted values its warning must list (NULL: the value
 * is a path, tested with the policy files), and whether every bad value
 * leaves the results of the run without it. */
struct variable {
    const char *name;
    const char *accepted; /* a word the warning must contain */
};

static const struct variable variables[] = {
    { "AMPSHIM_DISABLE", "true" },
    { "AMPSHIM_MODE", "shadow:bf16" },
    { "AMPSHIM_LOG_LEVEL", "debug" },
    { "AMPSHIM_QUIET", "true" },
    { "AMPSHIM_SUMMARY", "false" },
    { "AMPSHIM_SCRATCH_MAX", "K, M or G" },
    { "AMPSHIM_CALL_LOG", "true" },
    { "AMPSHIM_SNAPSHOT", "seconds" },
};

static void
test_bad_variables(void **state)
{
    const char *values[] = { "", huge_value, "-1", "12abc", garbage_value,
                             "99999999999999999999999" };

    memset(huge_value, '7', sizeof(huge_value) - 1);
    for (size_t v = 0; v < COUNT(variables); v++) {
        for (size_t i = 0; i < COUNT(values); i++) {
            const struct variable *x = &variables[v];
            /* AMPSHIM_MODE ignored: the built-in policy decides. */
            int mode = strcmp(x->name, "AMPSHIM_MODE") == 0;
            struct amp_test_run run;
            char what[128];
            int warnings, named;

            snprintf(what, sizeof(what), "%s=<%s>", x->name,
                     values[i] == huge_value ? "100000 digits"
                     : values[i] == garbage_value ? "garbage" : values[i]);
            run_sgemm(1, mode ? NULL : "fp16", &run, x->name, values[i]);
            amp_test_expect_exit(&run, 0, what);
            expect_stdout_of(&run, mode ? &sgemm_policy : &sgemm_plain,
                             what);
            /* One warning naming the variable and what it accepts; an
             * empty value is unset: nothing. */
            warnings = amp_test_count_lines_with(run.err, x->name);
            named = amp_test_count_lines_with(run.err, x->accepted);
            if (*values[i] == '\0' ? warnings == 0
                                   : warnings == 1 && named == 1)
                goto next;
            amp_test_run_dump(what, &run);
            fail_msg("%s: %d lines name the variable, %d list '%s'", what,
                     warnings, named, x->accepted);
next:
            amp_test_run_free(&run);
        }
    }
}

/* AMPSHIM_LOG_FILE: too long, or a directory that does not exist: one
 * warning on stderr naming the variable, results untouched. */
static void
test_bad_log_file(void **state)
{
    const char *values[] = { huge_value, "/nonexistent/dir/%p.log",
                             "/proc/self/nonexistent" };

    memset(huge_value, 'x', sizeof(huge_value) - 1);
    huge_value[0] = '/';
    for (size_t i = 0; i < COUNT(values); i++) {
        struct amp_test_run run;

        run_sgemm(1, "fp16", &run, "AMPSHIM_LOG_FILE", values[i]);
        amp_test_expect_exit(&run, 0,
                             values[i] == huge_value ? "huge" : values[i]);
        expect_stdout_of(&run, &sgemm_plain, "AMPSHIM_LOG_FILE");
        if (amp_test_count_lines_with(run.err, "AMPSHIM_LOG_FILE") != 1) {
            amp_test_run_dump("AMPSHIM_LOG_FILE", &run);
            fail_msg("expected one warning naming AMPSHIM_LOG_FILE");
        }
        amp_test_run_free(&run);
    }
}

/* A policy file that is empty, binary, 100 MB, nested 10,000 deep or has
 * a line of a megabyte: one message with file:line:col, and nothing
 * converted (FP32 bytes). */
struct bad_policy {
    const char *label;
    const char *where;  /* ":LINE:COL: " the message must carry (": " for
                           the file as a whole) */
};

static const struct bad_policy bad_policies[] = {
    { "empty", ":1:1: " },
    { "binary", ":1:" },
    { "huge", ": expected at most " },
    { "nested", ":1:" },
    { "long_line", ":1:1025: " },
};

static void
write_bad_policy(const char *label, const char *path)
{
    FILE *f = fopen(path, "wb");
    static char block[1 << 20];

    assert_non_null(f);
    if (strcmp(label, "binary") == 0) {
        for (size_t i = 0; i < 4096; i++)
            fputc((int)((i * 2654435761u) >> 13) & 0xff, f);
    } else if (strcmp(label, "huge") == 0) {
        memset(block, '#', sizeof(block));
        for (size_t i = 0; i < sizeof(block); i += 64)
            block[i] = '\n';
        for (int i = 0; i < 100; i++)
            fwrite(block, 1, sizeof(block), f);
    } else if (strcmp(label, "nested") == 0) {
        fputs("rule fp16 when ", f);
        for (int i = 0; i < 10000; i++)
            fputc('(', f);
        fputs("m > 1", f);
        for (int i = 0; i < 10000; i++)
            fputc(')', f);
        fputs("\ndefault fp32\n", f);
    } else if (strcmp(label, "long_line") == 0) {
        memset(block, 'a', sizeof(block));
        fputs("# ", f);
        fwrite(block, 1, sizeof(block), f);
        fputs("\ndefault fp16\n", f);
    }
    fclose(f);
}

static void
test_bad_policies(void **state)
{
    char dir[] = "/tmp/amp-policy-XXXXXX";

    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < COUNT(bad_policies); i++) {
        const struct bad_policy *b = &bad_policies[i];
        struct amp_test_run run;
        struct amp_test_summary sum;
        const struct amp_test_summary_line *l;
        char path[128], where[192];

        snprintf(path, sizeof(path), "%s/%s.policy", dir, b->label);
        snprintf(where, sizeof(where), "%s%s", path, b->where);
        write_bad_policy(b->label, path);
        run_sgemm(1, NULL, &run, "AMPSHIM_POLICY", path);
        amp_test_expect_exit(&run, 0, b->label);
        expect_stdout_of(&run, &sgemm_fp32, b->label);
        amp_test_parse_summary(run.err, &sum);
        l = amp_test_summary_find(&sum, "cublasSgemm_v2");
        assert_non_null(l);
        assert_int_equal(l->converted, 0);
        if (amp_test_count_lines_with(run.err, where) != 1) {
            amp_test_run_dump(b->label, &run);
            fail_msg("%s: expected one message with '%s'", b->label, where);
        }
        unlink(path);
        amp_test_run_free(&run);
    }
    rmdir(dir);
}

/* ---- main ---------------------------------------------------------------- */

int
main(int argc, char **argv)
{
    const struct CMUnitTest matrix[] = {
        cmocka_unit_test(test_fault_matrix),
    };
    const struct CMUnitTest launches[] = {
        cmocka_unit_test(test_fault_every_launch),
    };
    const struct CMUnitTest threads[] = { cmocka_unit_test(test_threads) };
    const struct CMUnitTest fork_tests[] = { cmocka_unit_test(test_fork) };
    const struct CMUnitTest exit_tests[] = {
        cmocka_unit_test(test_exit_under_threads),
    };
    const struct CMUnitTest nocuda[] = { cmocka_unit_test(test_no_cuda) };
    const struct CMUnitTest env[] = {
        cmocka_unit_test(test_bad_variables),
        cmocka_unit_test(test_bad_log_file),
    };
    const struct CMUnitTest policy[] = {
        cmocka_unit_test(test_bad_policies),
    };
    const char *group;

    if (argc < 5) {
        fprintf(stderr, "usage: %s GROUP LIBAMPSHIM EMU_DIR PROGRAM...\n",
                argv[0]);
        return 2;
    }
    group = argv[1];
    libampshim_path = realpath(argv[2], NULL);
    if (!libampshim_path) {
        fprintf(stderr, "%s: no %s\n", argv[0], argv[2]);
        return 1;
    }
    emu_dir = argv[3];
    for (int i = 4; i < argc && nprograms < (int)COUNT(programs); i++) {
        /* Absolute: some runs change directory first. */
        programs[nprograms] = realpath(argv[i], NULL);
        if (!programs[nprograms++]) {
            fprintf(stderr, "%s: no program %s\n", argv[0], argv[i]);
            return 1;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(group, "matrix") == 0 && nprograms == 4)
        return cmocka_run_group_tests_name("matrix", matrix, NULL, NULL);
    if (strcmp(group, "launches") == 0 && nprograms == 4)
        return cmocka_run_group_tests_name("launches", launches, NULL, NULL);
    if (strcmp(group, "threads") == 0)
        return cmocka_run_group_tests_name("threads", threads, NULL, NULL);
    if (strcmp(group, "fork") == 0)
        return cmocka_run_group_tests_name("fork", fork_tests, NULL, NULL);
    if (strcmp(group, "exit") == 0)
        return cmocka_run_group_tests_name("exit", exit_tests, NULL, NULL);
    if (strcmp(group, "nocuda") == 0)
        return cmocka_run_group_tests_name("nocuda", nocuda, NULL, NULL);
    if (strcmp(group, "env") == 0)
        return cmocka_run_group_tests_name("env", env, sgemm_setup,
                                           sgemm_teardown);
    if (strcmp(group, "policy") == 0)
        return cmocka_run_group_tests_name("policy", policy, sgemm_setup,
                                           sgemm_teardown);
    fprintf(stderr, "%s: unknown group '%s' or wrong programs\n", argv[0],
            group);
    return 2;
}
