/* The legacy trainer's bar, on the CPU device emulator: the same training
 * (steps of 512 images, 8192 hidden units, the trainer's defaults) plain
 * FP32 and under `ampshim run` with the built-in default policy. Under the
 * shim at least 90 % of the GEMM and convolution FLOPs run converted (from
 * the report), and the test accuracy after the same steps is within 1
 * percentage point of FP32. TRAIN and TEST images (default 16384 and 1024:
 * 32 steps); the default suites run 16 steps (8192 and 1024).
 *
 * usage: test_trainer_shim LEGACY_TRAINER EMU_DIR AMPSHIM_TOOL [TRAIN TEST] */
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

/* Each run takes a minute or two of one CPU core; room for a loaded
 * machine. */
#define RUN_TIMEOUT_S 1200
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

#define BATCH 512
#define HIDDEN 8192

static const char *trainer_path, *emu_dir, *tool_path;
/* Training and test images, as text for the trainer's options. */
static const char *train_images = "16384", *test_images = "1024";

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

/* The FP32 FLOPs of the run's GEMMs and convolutions (2 per multiply-add):
 * per training step the two fully connected layers' three GEMMs each
 * (forward, weight gradient, input gradient), the first convolution's
 * forward and filter gradient (the images need no gradient), the second's
 * three; per test batch the forward ones. */
static double
expected_flops(void)
{
    double b = BATCH, h = HIDDEN;
    double fc = 784 * h * b + 10 * h * b;
    double conv1 = b * 4 * 28 * 28 * 1 * 9, conv2 = b * 16 * 14 * 14 * 4 * 9;
    double steps = atoi(train_images) / BATCH;
    double tests = atoi(test_images) / BATCH;

    return 2 * (steps * (3 * fc + 2 * conv1 + 3 * conv2) +
                tests * (fc + conv1 + conv2));
}

static void
test_converted_and_accurate(void **state)
{
    char dir[] = "/tmp/test_trainer_shim.XXXXXX", report[96];
    char *fp32_argv[16], *shim_argv[24];
    struct amp_test_run fp32, shim;
    struct result rf, rs;
    const struct amp_json *tot, *sites;
    struct amp_json *doc;
    char err[128], *text;
    size_t n = 0, m = 0;
    double share, flops;
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
        "--seed", "3", NULL,
    };

    for (const char *const *a = train_args; *a != NULL; a++) {
        fp32_argv[n++] = (char *)*a;
        shim_argv[m++] = (char *)*a;
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
    assert_true(rf.acc > 60.0);
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
    fprintf(stderr, "converted share %.4f of %.4g FLOPs (expected %.4g); "
            "speedup %.3f\n", share, flops, expected_flops(),
            amp_json_num(amp_json_get(tot, "speedup"), -1.0));
    /* Every GEMM and convolution of the run was seen. */
    assert_true(fabs(flops - expected_flops()) <= 1e-9 * expected_flops());
    assert_true(share >= 0.90);
    assert_true(share <= 1.0);
    assert_int_equal(amp_json_num(amp_json_get(tot, "fallback"), -1.0), 0);
    /* The first layer's three GEMMs converted, none demoted. */
    sites = amp_json_get(doc, "sites");
    assert_non_null(sites);
    for (size_t i = 0; i < sites->count; i++) {
        const struct amp_json *s = &sites->items[i];

        const struct amp_json *demoted = amp_json_get(s, "demoted");

        assert_non_null(demoted);
        assert_int_equal(demoted->type, AMP_JSON_BOOL);
        assert_false(demoted->boolean);
        if (amp_json_num(amp_json_get(s, "converted"), 0.0) > 0)
            converted_sites++;
    }
    assert_int_equal(converted_sites, 3);

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

    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: test_trainer_shim LEGACY_TRAINER EMU_DIR "
                "AMPSHIM_TOOL [TRAIN TEST]\n");
        return 2;
    }
    if (argc == 6) {
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
