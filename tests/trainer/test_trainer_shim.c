/* The legacy trainer's bar, on the CPU device emulator: the same training
 * (steps of 256 images, 1024 hidden units, the trainer's other
 * defaults) plain FP32 and under `ampshim run` with the built-in default
 * policy, whose rules are auto. Under the shim at least 90 % of the GEMM
 * and convolution FLOPs reach the converted path (each shape's candidates
 * measured in shadow, then its choice), and at least 75 % of the
 * convolutions' alone (from the report); the convolutions carry most of
 * the FLOPs. Every such shape chose the fastest candidate within the
 * tolerance: on the H100 model the fully connected layers' GEMMs convert
 * and gain, and the convolutions of fewer than 128 input channels,
 * slower converted than cuDNN's TF32 FP32, stay FP32 (of 128 and more,
 * some gain a little converted and convert). The test accuracy after the
 * same steps is within 1
 * percentage point of FP32. TRAIN and TEST images
 * (default 8192 and 1024: 16 steps); the default suites run fewer (the
 * arguments in meson.build). fc-lt: both runs with --fc-lt (the fully
 * connected layers' forward products through cuBLASLt with the bias and
 * ReLU fused), whose site must convert as cublasLtMatmul. conv-graph:
 * both runs with --conv-graph (the convolutions through cuDNN's backend
 * API), whose three sites must convert as cudnnBackendExecute.
 *
 * usage: test_trainer_shim LEGACY_TRAINER EMU_DIR AMPSHIM_TOOL
 *                          [TRAIN TEST [fc-lt|conv-graph]] */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "harness.h"

/* Each run takes a minute or a few of one CPU core; room for a loaded
 * machine. */
#define RUN_TIMEOUT_S 1200
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Images per step: few enough that a short run takes the steps auto
 * needs to measure each shape (three timed shadow calls per candidate)
 * and then converts, enough that every product but the first
 * convolution's and the output layer's stays above the built-in policy's
 * min-size (512M multiply-adds: the first fully connected layer has 604M
 * at 256 images, 453M at 192). */
#define BATCH 256
#define BATCH_ARG "256"
#define HIDDEN 1024

static const char *trainer_path, *emu_dir, *tool_path;
/* Training and test images, as text for the trainer's options. */
static const char *train_images = "8192", *test_images = "1024";
static int fc_lt, conv_graph;
/* Converted sites whose API is cublasLtMatmul, cudnnBackendExecute. */
static int lt_sites, graph_sites;

struct result {
    int epochs, has_final;
    double loss, acc;
};

static void
parse_result(const char *out, struct result *r)
{
    char *copy = strdup(out), *save = NULL;

    assert_non_null(copy);
    memset(r, 0, sizeof(*r));
    for (char *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        int end = -1;

        if (strncmp(line, "epoch ", 6) == 0)
            r->epochs++;
        if (sscanf(line, "final loss %lf test_acc %lf%n", &r->loss, &r->acc,
                   &end) == 2 && line[end] == '\0')
            r->has_final = 1;
    }
    free(copy);
}

/* Runs argv (NULL-terminated, argv[0] a path) on the emulator; no policy
 * file of the user's or the system's can apply (XDG directories point
 * into dir). */
static void
run_on_emu(char *const *argv, const char *dir, struct amp_test_run *run)
{
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "HOME", dir);
    amp_test_env_set(&env, "XDG_CONFIG_HOME", dir);
    amp_test_env_set(&env, "XDG_CONFIG_DIRS", dir);
    /* Empty, or a sanitized build's runtime: `ampshim run` preloads the
     * shim after it. */
    amp_test_env_set(&env, "LD_PRELOAD", "");
    assert_int_equal(amp_test_run(argv, &env, RUN_TIMEOUT_S, run), 0);
    amp_test_env_free(&env);
    if (!run->exited || run->code != 0)
        amp_test_run_dump(argv[0], run);
    assert_true(run->exited);
    assert_int_equal(run->code, 0);
}

/* The trainer's network (examples/legacy_trainer/net.c): 3x3
 * convolutions with padding 1, their output channels, and which are
 * followed by a 2x2 max pooling; then fully connected layers from the
 * flattened output to HIDDEN units and to 10 classes. */
static const struct {
    int cout, pool;
} convs[] = {
    { 32, 1 }, { 64, 0 }, { 64, 1 }, { 128, 0 }, { 128, 1 }, { 256, 0 },
    { 256, 0 },
};
#define NCONVS (sizeof(convs) / sizeof(convs[0]))

/* The FP32 FLOPs of the run's convolutions and GEMMs (2 per multiply-add):
 * per training step each convolution's forward and filter gradient and,
 * but for the first (the images need none), its data gradient; each fully
 * connected layer's three GEMMs (forward, weight gradient, input
 * gradient); per test batch the forward ones. */
static void
expected_flops(double *conv, double *gemm)
{
    double b = BATCH, fwd = 0.0, train = 0.0, fc[3];
    double steps = atoi(train_images) / BATCH;
    double tests = atoi(test_images) / BATCH;
    int side = 28, cin = 1;

    for (size_t i = 0; i < NCONVS; i++) {
        double macs = b * cin * convs[i].cout * side * side * 9;

        fwd += macs;
        train += (i == 0 ? 2 : 3) * macs;
        cin = convs[i].cout;
        if (convs[i].pool)
            side /= 2;
    }
    fc[0] = (double)cin * side * side;
    fc[1] = HIDDEN;
    fc[2] = 10;
    *conv = 2 * (steps * train + tests * fwd);
    *gemm = 2 * (3 * steps + tests) * b * (fc[0] * fc[1] + fc[1] * fc[2]);
}

/* Shadow calls of the run: auto's measurements of its candidates. */
static double shadow_calls;

/* FLOPs of the shapes that took the converted path. */
static double reached_flops, reached_conv_flops;

/* auto's choice at a shape: made, the fastest candidate within the
 * tolerance (or fp32 when none is faster than FP32), every shadow call a
 * candidate's; the GEMMs convert, and the convolutions with fewer than 128
 * input channels (narrow: on the H100 model every candidate is slower
 * than cuDNN's TF32 FP32 there) stay FP32. Returns the number of shadow
 * calls. */
static double
check_auto(const struct amp_json *shape, int is_conv, int narrow,
           double calls, double converted)
{
    const struct amp_json *a = amp_json_get(shape, "auto");
    const struct amp_json *cands = amp_json_get(a, "candidates");
    const char *choice = amp_json_str(amp_json_get(a, "choice"));
    const char *best = "fp32";
    double best_ms = 0.0, issued = 0.0;
    /* Calls that ran FP32 while auto awaited its shadow calls' results. */
    double waited = amp_json_num(amp_json_get(amp_json_get(shape,
                                                           "fp32_reasons"),
                                              "measuring"), 0.0);

    assert_non_null(cands);
    if (!choice) {
        /* Still measuring: a shape of the evaluation's site (its own
         * site, the forward pass called from there), one call per test
         * batch, each a candidate's shadow call or FP32 while their
         * results were on their way. */
        for (size_t i = 0; i < cands->count; i++)
            issued += amp_json_num(amp_json_get(&cands->items[i],
                                                "shadow_calls"), -1.0);
        assert_string_equal(amp_json_str(amp_json_get(a, "state")),
                            "measuring");
        assert_true(issued + waited == calls && converted == issued &&
                    calls * BATCH <= atof(test_images));
        return issued;
    }
    for (size_t i = 0; i < cands->count; i++) {
        const struct amp_json *c = &cands->items[i];
        const struct amp_json *ok = amp_json_get(c, "eligible");
        double ms = amp_json_num(amp_json_get(c, "candidate_ms"), -1.0);

        issued += amp_json_num(amp_json_get(c, "shadow_calls"), -1.0);
        assert_non_null(ok);
        if (ok->boolean && (strcmp(best, "fp32") == 0 || ms < best_ms)) {
            best = amp_json_str(amp_json_get(c, "mode"));
            best_ms = ms;
        }
    }
    assert_string_equal(choice, best);
    if (!is_conv)
        assert_string_not_equal(choice, "fp32");
    else if (narrow)
        assert_string_equal(choice, "fp32");
    /* The choice converts the calls after the measurements; fp32 keeps
     * them FP32 (reason auto). */
    assert_true(issued >= 3 && issued + waited <= calls);
    if (strcmp(choice, "fp32") == 0)
        assert_true(converted == issued &&
                    amp_json_num(amp_json_get(amp_json_get(shape,
                                              "fp32_reasons"), "auto"),
                                 -1.0) == calls - issued - waited);
    else
        assert_true(converted + waited == calls);
    return issued;
}

/* Whether a shape of the report took the converted path: every
 * convolution but the first (1 input channel), every GEMM but the 10-unit
 * output layer's; such a shape's candidates run in shadow, then its
 * choice (check_auto). */
static void
check_shape(const struct amp_json *shape, int is_conv)
{
    const struct amp_json *dims = amp_json_get(shape, "dims");
    double converted = amp_json_num(amp_json_get(shape, "converted"), -1.0);
    double channels = 0.0;
    double calls = amp_json_num(amp_json_get(shape, "calls"), -1.0);
    double shadow = amp_json_num(amp_json_get(amp_json_get(shape, "modes"),
                                              "shadow"), 0.0);
    double flops = amp_json_num(amp_json_get(amp_json_get(shape, "flops"),
                                             "total"), -1.0);
    int small = 0;

    assert_non_null(dims);
    if (is_conv) {
        const struct amp_json *x = amp_json_get(dims, "x");

        assert_non_null(x);
        assert_true(x->count >= 2);
        channels = amp_json_num(&x->items[1], -1.0);
        small = channels == 1.0;
    } else {
        small = amp_json_num(amp_json_get(dims, "m"), -1.0) == 10.0 ||
                amp_json_num(amp_json_get(dims, "n"), -1.0) == 10.0 ||
                amp_json_num(amp_json_get(dims, "k"), -1.0) == 10.0;
    }
    if (small) {
        assert_true(converted == 0.0);
        return;
    }
    assert_true(shadow == check_auto(shape, is_conv, channels < 128.0, calls,
                                     converted));
    shadow_calls += shadow;
    reached_flops += flops;
    if (is_conv)
        reached_conv_flops += flops;
}

/* One site of the report: not demoted, its shapes as check_shape says;
 * its convolution FLOPs added to *conv and *conv_converted, and to
 * *converted_sites when it took the converted path for any call (shadow
 * calls included). Times modelled on the H100 (docs/guide.md, The
 * demo): a site of the fully connected layers' GEMMs gains in steady
 * state (its steady_speedup), one of the convolutions,
 * whose candidates against cuDNN's TF32 FP32 are slower or gain little,
 * or one that only measured, loses what its shadow calls cost. */
static void
check_site(const struct amp_json *site, double *conv,
           double *conv_converted, int *converted_sites)
{
    const struct amp_json *demoted = amp_json_get(site, "demoted");
    const struct amp_json *shapes = amp_json_get(site, "shapes");
    const struct amp_json *f = amp_json_get(site, "flops");
    double speedup = amp_json_num(amp_json_get(amp_json_get(site, "time"),
                                               "speedup"), -1.0);
    double steady = amp_json_num(amp_json_get(amp_json_get(site, "time"),
                                              "steady_speedup"), -1.0);
    int is_conv = strcmp(amp_json_str(amp_json_get(site, "family")),
                         "conv") == 0;

    assert_non_null(demoted);
    assert_int_equal(demoted->type, AMP_JSON_BOOL);
    assert_false(demoted->boolean);
    if (amp_json_num(amp_json_get(site, "converted"), 0.0) > 0) {
        (*converted_sites)++;
        lt_sites += strcmp(amp_json_str(amp_json_get(site, "api")),
                           "cublasLtMatmul") == 0;
        graph_sites += strcmp(amp_json_str(amp_json_get(site, "api")),
                              "cudnnBackendExecute") == 0;
        double shadow = amp_json_num(amp_json_get(amp_json_get(site,
                                                               "modes"),
                                                  "shadow"), 0.0);

        assert_true(speedup > 0.0);
        /* A site that only measured (the evaluation's) loses too; a site
         * of GEMMs gains once measuring is over (16 steps do not pay its
         * ten shadow calls back). */
        if (is_conv || shadow == amp_json_num(amp_json_get(site,
                                                           "converted"), 0.0))
            assert_true(speedup < 1.0);
        else
            assert_true(steady > 1.0);
    }
    assert_non_null(shapes);
    for (size_t i = 0; i < shapes->count; i++)
        check_shape(&shapes->items[i], is_conv);
    if (!is_conv)
        return;
    *conv += amp_json_num(amp_json_get(f, "total"), -1.0);
    *conv_converted += amp_json_num(amp_json_get(f, "converted"), -1.0);
}

static void
test_converted_and_accurate(void **state)
{
    char dir[] = "/tmp/test_trainer_shim.XXXXXX", report[96];
    char *fp32_argv[16], *shim_argv[24], fc_lt_arg[] = "--fc-lt";
    char conv_graph_arg[] = "--conv-graph";
    struct amp_test_run fp32, shim;
    struct result rf, rs;
    const struct amp_json *tot, *sites;
    struct amp_json *doc;
    char err[128], *text;
    size_t n = 0, m = 0;
    double share, flops, want_conv, want_gemm, conv = 0.0;
    double conv_converted = 0.0;
    int converted_sites = 0;

    assert_non_null(mkdtemp(dir));
    snprintf(report, sizeof(report), "%s/trainer.json", dir);
    fp32_argv[n++] = (char *)trainer_path;
    shim_argv[m++] = (char *)tool_path;
    shim_argv[m++] = "run";
    shim_argv[m++] = "--report";
    shim_argv[m++] = report;
    shim_argv[m++] = "--";
    shim_argv[m++] = (char *)trainer_path;
    const char *const train_args[] = {
        "--train", train_images, "--test", test_images, "--epochs", "1",
        "--batch-size", BATCH_ARG, "--seed", "3", NULL,
    };

    for (const char *const *a = train_args; *a != NULL; a++) {
        fp32_argv[n++] = (char *)*a;
        shim_argv[m++] = (char *)*a;
    }
    if (fc_lt) {
        fp32_argv[n++] = fc_lt_arg;
        shim_argv[m++] = fc_lt_arg;
    }
    if (conv_graph) {
        fp32_argv[n++] = conv_graph_arg;
        shim_argv[m++] = conv_graph_arg;
    }
    fp32_argv[n] = NULL;
    shim_argv[m] = NULL;

    run_on_emu(fp32_argv, dir, &fp32);
    run_on_emu(shim_argv, dir, &shim);
    parse_result(fp32.out, &rf);
    parse_result(shim.out, &rs);
    fprintf(stderr, "fp32:    loss %.4f test_acc %.2f\n"
            "ampshim: loss %.4f test_acc %.2f\n", rf.loss, rf.acc, rs.loss,
            rs.acc);
    assert_true(rf.has_final && rs.has_final);
    assert_int_equal(rf.epochs, 1);
    assert_int_equal(rs.epochs, 1);
    /* It learnt (chance is 10 %), and the shim changed the result but
     * little. */
    assert_true(rf.acc > 40.0);
    assert_true(fabs(rs.acc - rf.acc) <= 1.0);

    text = amp_test_read_file(report);
    assert_non_null(text);
    doc = amp_json_parse(text, strlen(text), err, sizeof(err));
    if (doc == NULL)
        fprintf(stderr, "%s: %s\n", report, err);
    assert_non_null(doc);
    assert_string_equal(amp_json_str(amp_json_get(amp_json_get(doc,
                        "policy"), "source")), "built-in");
    assert_string_equal(amp_json_str(amp_json_get(amp_json_get(doc,
                        "device"), "timing")), "modelled");
    tot = amp_json_get(doc, "totals");
    flops = amp_json_num(amp_json_get(tot, "flops_fp32"), -1.0);
    share = amp_json_num(amp_json_get(tot, "converted_share"), -1.0);
    expected_flops(&want_conv, &want_gemm);
    sites = amp_json_get(doc, "sites");
    assert_non_null(sites);
    for (size_t i = 0; i < sites->count; i++)
        check_site(&sites->items[i], &conv, &conv_converted,
                   &converted_sites);
    fprintf(stderr, "converted path %.4f of %.4g FLOPs (expected %.4g), "
            "of the convolutions' %.4f of %.4g (expected %.4g); converted "
            "%.4f after %.0f shadow calls; speedup %.3f\n",
            reached_flops / flops, flops, want_conv + want_gemm,
            reached_conv_flops / conv, conv, want_conv, share, shadow_calls,
            amp_json_num(amp_json_get(tot, "speedup"), -1.0));
    /* Every GEMM and convolution of the run was seen, and the
     * convolutions carry most of the work. At least 90 % of the FLOPs (75 %
     * of the convolutions') took the converted path: the shapes auto
     * measures, then decides. What ran converted is the GEMMs' calls after
     * their measurements and those of the convolutions auto converted;
     * the narrow ones stayed FP32, so not all of the convolutions'. */
    assert_true(fabs(flops - (want_conv + want_gemm)) <= 1e-9 * flops);
    assert_true(fabs(conv - want_conv) <= 1e-9 * conv);
    assert_true(conv >= 0.75 * flops);
    assert_true(reached_flops >= 0.90 * flops);
    assert_true(reached_conv_flops >= 0.75 * conv);
    assert_true(share > 0.0 && share < reached_flops / flops);
    assert_true(conv_converted < conv);
    assert_int_equal(amp_json_num(amp_json_get(tot, "fallback"), -1.0), 0);
    /* The three sites of the training step's convolutions and the three
     * of its fully connected layers' GEMMs took the converted path, each
     * shape measured; and the forward pass's two called from the
     * evaluation (a site is keyed by the call stack: the forward pass
     * and the function that called it), measuring. */
    assert_int_equal(converted_sites, 8);
    /* With --fc-lt, the forward products' sites are cuBLASLt's. */
    assert_int_equal(lt_sites, fc_lt ? 2 : 0);
    /* With --conv-graph, the four convolution sites are the backend
     * API's. */
    assert_int_equal(graph_sites, conv_graph ? 4 : 0);
    assert_true(amp_json_num(amp_json_get(tot, "shadow"), -1.0) ==
                shadow_calls);

    amp_json_free(doc);
    free(text);
    unlink(report);
    rmdir(dir);
    amp_test_run_free(&fp32);
    amp_test_run_free(&shim);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converted_and_accurate),
    };
    struct stat st;

    if (argc != 4 && argc != 6 &&
        !(argc == 7 && (strcmp(argv[6], "fc-lt") == 0 ||
                        strcmp(argv[6], "conv-graph") == 0))) {
        fprintf(stderr, "usage: test_trainer_shim LEGACY_TRAINER EMU_DIR "
                "AMPSHIM_TOOL [TRAIN TEST [fc-lt|conv-graph]]\n");
        return 2;
    }
    fc_lt = argc == 7 && strcmp(argv[6], "fc-lt") == 0;
    conv_graph = argc == 7 && strcmp(argv[6], "conv-graph") == 0;
    if (argc >= 6) {
        train_images = argv[4];
        test_images = argv[5];
        if (atoi(train_images) < BATCH || atoi(train_images) % BATCH != 0 ||
            atoi(test_images) < BATCH || atoi(test_images) % BATCH != 0) {
            fprintf(stderr, "test_trainer_shim: TRAIN and TEST are "
                    "multiples of %d\n", BATCH);
            return 2;
        }
    }
    if (stat(FMNIST_DIR "/train-images-idx3-ubyte.gz", &st) != 0) {
        fprintf(stderr, "Fashion-MNIST is not in " FMNIST_DIR ": install "
                "the Debian package dataset-fashion-mnist\n");
        return 1;
    }
    trainer_path = argv[1];
    emu_dir = argv[2];
    tool_path = argv[3];
    return cmocka_run_group_tests_name("trainer_shim", tests, NULL, NULL);
}
