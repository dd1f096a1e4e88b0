/* The legacy trainer data-parallel under Open MPI's mpirun, on the CPU
 * device emulator with two emulated devices (AMPSHIM_EMU_DEVICES=2):
 * `mpirun -np 2 ampshim run --policy POLICY --report DIR/rank-%r.json --
 * legacy_trainer_mpi` beside the single-process legacy_trainer, plain
 * FP32, with the same global batch (512) and seed. POLICY is the example
 * trainer policy (policy/examples/trainer.policy): each rank's fully
 * connected layers multiply 256 images, under the built-in policy's
 * 512 in every dimension, so that it would keep them FP32. It checks:
 * - the job's output is rank 0's alone, in the single-process format
 *   (one device, timing, epoch and final line);
 * - the test accuracy is within 1 point of the single process's, which
 *   learnt (above 40 %, chance is 10 %): the gradients of the two halves
 *   of each batch, averaged across the ranks, make the same training;
 * - each rank wrote its own report through %r, its job object that of
 *   Open MPI's rank 0 or 1 of 2 with the same job id, and converted calls
 *   at its convolution and at its GEMM sites;
 * - `ampshim report DIR` prints one job summary: the job line, one line
 *   per rank naming its report, the totals (the two reports' calls and
 *   converted calls added up), the slowest rank, and no site whose
 *   decisions differ (the ranks run the same calls under the same policy).
 *
 * usage: test_trainer_mpi MPIRUN LEGACY_TRAINER LEGACY_TRAINER_MPI EMU_DIR
 *                         AMPSHIM_TOOL POLICY TRAIN TEST */
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

/* Each run takes a minute or two of a CPU core per process; room for a
 * loaded machine. */
#define RUN_TIMEOUT_S 1200
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define BATCH 512
#define RANKS 2

static const char *mpirun_path, *trainer_path, *trainer_mpi_path, *emu_dir;
static const char *tool_path, *policy_path, *train_images, *test_images;

/* What a trainer's output holds: its known lines, counted. */
struct result {
    int devices, timings, epochs, finals, others;
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

        if (strncmp(line, "device ", 7) == 0)
            r->devices++;
        else if (strncmp(line, "timing ", 7) == 0)
            r->timings++;
        else if (strncmp(line, "epoch ", 6) == 0)
            r->epochs++;
        else if (sscanf(line, "final loss %lf test_acc %lf%n", &r->loss,
                        &r->acc, &end) == 2 && line[end] == '\0')
            r->finals++;
        else
            r->others++;
    }
    free(copy);
}

/* Runs argv (NULL-terminated, argv[0] a path) on the emulator with two
 * devices; no policy file of the user's or the system's can apply (XDG
 * directories point into dir). */
static void
run_on_emu(char *const *argv, const char *dir, struct amp_test_run *run)
{
    struct amp_test_env env;

    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    amp_test_env_set(&env, "AMPSHIM_EMU_DEVICES", "2");
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

/* Whether some line of text starts with prefix and ends with suffix. */
static int
has_line(const char *text, const char *prefix, const char *suffix)
{
    size_t np = strlen(prefix), ns = strlen(suffix);

    for (const char *line = text; *line != '\0';) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);

        if (len >= np + ns && strncmp(line, prefix, np) == 0 &&
            strncmp(line + len - ns, suffix, ns) == 0)
            return 1;
        line += len + (nl != NULL);
    }
    return 0;
}

/* One rank's report: its job object, and converted calls at a
 * convolution site and at a GEMM site. Adds its calls and delivered
 * converted calls to *calls and *converted; its job id in id. */
static void
check_report(const char *path, int rank, double *calls, double *converted,
             char *id, size_t id_cap)
{
    char err[128], *text = amp_test_read_file(path);
    const struct amp_json *job, *sites, *tot;
    const char *policy;
    struct amp_json *doc;
    int conv_sites = 0, gemm_sites = 0;

    if (text == NULL)
        fprintf(stderr, "%s: no report\n", path);
    assert_non_null(text);
    doc = amp_json_parse(text, strlen(text), err, sizeof(err));
    if (doc == NULL)
        fprintf(stderr, "%s: %s\n", path, err);
    assert_non_null(doc);
    job = amp_json_get(doc, "job");
    assert_non_null(job);
    assert_int_equal(job->type, AMP_JSON_OBJECT);
    assert_string_equal(amp_json_str(amp_json_get(job, "launcher")),
                        "openmpi");
    assert_true(amp_json_num(amp_json_get(job, "rank"), -1.0) == rank);
    assert_true(amp_json_num(amp_json_get(job, "local_rank"), -1.0) ==
                rank);
    assert_true(amp_json_num(amp_json_get(job, "size"), -1.0) == RANKS);
    assert_non_null(amp_json_str(amp_json_get(job, "id")));
    snprintf(id, id_cap, "%s", amp_json_str(amp_json_get(job, "id")));
    assert_string_equal(amp_json_str(amp_json_get(amp_json_get(doc,
                        "device"), "timing")), "modelled");
    policy = amp_json_str(amp_json_get(amp_json_get(doc, "policy"),
                                       "path"));
    assert_non_null(policy);
    assert_true(strlen(policy) >= strlen("/trainer.policy") &&
                strcmp(policy + strlen(policy) - strlen("/trainer.policy"),
                       "/trainer.policy") == 0);

    sites = amp_json_get(doc, "sites");
    assert_non_null(sites);
    for (size_t i = 0; i < sites->count; i++) {
        const struct amp_json *site = &sites->items[i];
        const char *family = amp_json_str(amp_json_get(site, "family"));

        if (amp_json_num(amp_json_get(site, "converted"), 0.0) <= 0.0)
            continue;
        assert_non_null(family);
        conv_sites += strcmp(family, "conv") == 0;
        gemm_sites += strcmp(family, "gemm") == 0;
    }
    /* The convolutions' three sites of the training step (forward, data
     * and filter gradients) and the fully connected layers' three GEMM
     * sites, and the forward pass's convolution and GEMM called from the
     * evaluation (a site is keyed by the call stack: the forward pass and
     * the function that called it). */
    fprintf(stderr, "rank %d: %d convolution and %d GEMM sites "
            "converted\n", rank, conv_sites, gemm_sites);
    assert_int_equal(conv_sites, 4);
    assert_int_equal(gemm_sites, 4);
    tot = amp_json_get(doc, "totals");
    assert_int_equal(amp_json_num(amp_json_get(tot, "fallback"), -1.0), 0);
    *calls += amp_json_num(amp_json_get(tot, "calls"), -1.0);
    /* The job's "converted" counts the calls whose converted result the
     * program got (a rank's delivered calls), not shadow calls. */
    *converted += amp_json_num(amp_json_get(tot, "delivered"), -1.0);
    amp_json_free(doc);
    free(text);
}

static void
test_data_parallel(void **state)
{
    char dir[] = "/tmp/test_trainer_mpi.XXXXXX", reports[64];
    char pattern[96], path[2][96], id[2][64], line[256];
    char *single_argv[16], *job_argv[32], *sum_argv[4];
    struct amp_test_run single, job, sum;
    struct result rs, rj;
    double calls = 0.0, converted = 0.0;
    size_t n = 0, m = 0;
    const char *const train_args[] = {
        "--train", train_images, "--test", test_images, "--epochs", "1",
        "--batch-size", "512", "--seed", "3", NULL,
    };

    assert_non_null(mkdtemp(dir));
    snprintf(reports, sizeof(reports), "%s/reports", dir);
    assert_int_equal(mkdir(reports, 0700), 0);
    snprintf(pattern, sizeof(pattern), "%s/rank-%%r.json", reports);
    single_argv[n++] = (char *)trainer_path;
    job_argv[m++] = (char *)mpirun_path;
    /* As CI runs, as root: Open MPI refuses root without this. Two ranks
     * on two cores need nothing more. */
    job_argv[m++] = "--allow-run-as-root";
    job_argv[m++] = "-np";
    job_argv[m++] = "2";
    job_argv[m++] = (char *)tool_path;
    job_argv[m++] = "run";
    job_argv[m++] = "--policy";
    job_argv[m++] = (char *)policy_path;
    job_argv[m++] = "--report";
    job_argv[m++] = pattern;
    job_argv[m++] = "--";
    job_argv[m++] = (char *)trainer_mpi_path;
    for (const char *const *a = train_args; *a != NULL; a++) {
        single_argv[n++] = (char *)*a;
        job_argv[m++] = (char *)*a;
    }
    single_argv[n] = NULL;
    job_argv[m] = NULL;

    run_on_emu(single_argv, dir, &single);
    run_on_emu(job_argv, dir, &job);
    parse_result(single.out, &rs);
    parse_result(job.out, &rj);
    fprintf(stderr, "1 process:  loss %.4f test_acc %.2f\n"
            "2 ranks:    loss %.4f test_acc %.2f\n", rs.loss, rs.acc,
            rj.loss, rj.acc);
    /* Rank 0 alone printed, the single process's lines. */
    assert_int_equal(rs.finals, 1);
    assert_int_equal(rj.devices, 1);
    assert_int_equal(rj.timings, 1);
    assert_int_equal(rj.epochs, 1);
    assert_int_equal(rj.finals, 1);
    if (rj.others != 0)
        amp_test_run_dump("mpirun", &job);
    assert_int_equal(rj.others, 0);
    /* It learnt, and the two ranks trained as the one process did. */
    assert_true(rs.acc > 40.0);
    assert_true(fabs(rj.acc - rs.acc) <= 1.0);

    for (int r = 0; r < RANKS; r++) {
        snprintf(path[r], sizeof(path[r]), "%s/rank-%d.json", reports, r);
        check_report(path[r], r, &calls, &converted, id[r], sizeof(id[r]));
    }
    assert_string_equal(id[0], id[1]);

    sum_argv[0] = (char *)tool_path;
    sum_argv[1] = "report";
    sum_argv[2] = reports;
    sum_argv[3] = NULL;
    run_on_emu(sum_argv, dir, &sum);
    fprintf(stderr, "%s", sum.out);
    snprintf(line, sizeof(line), "job: 2 processes (openmpi, job %s, "
             "size 2)\n", id[0]);
    assert_true(strncmp(sum.out, line, strlen(line)) == 0);
    assert_true(has_line(sum.out, "0      ", path[0]));
    assert_true(has_line(sum.out, "1      ", path[1]));
    assert_int_equal(amp_test_count_lines_with(sum.out, "/rank-"), 2);
    snprintf(line, sizeof(line), "total: %.0f calls, %.0f converted; ",
             calls, converted);
    assert_true(has_line(sum.out, line, ""));
    assert_true(has_line(sum.out, "slowest: rank ", "over the fastest"));
    assert_int_equal(amp_test_count_lines_with(sum.out, "decisions differ"),
                     0);
    assert_int_equal(sum.err_len, 0);

    for (int r = 0; r < RANKS; r++)
        unlink(path[r]);
    rmdir(reports);
    rmdir(dir);
    amp_test_run_free(&single);
    amp_test_run_free(&job);
    amp_test_run_free(&sum);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_parallel),
    };
    struct stat st;

    if (argc != 9) {
        fprintf(stderr, "usage: test_trainer_mpi MPIRUN LEGACY_TRAINER "
                "LEGACY_TRAINER_MPI EMU_DIR AMPSHIM_TOOL POLICY TRAIN "
                "TEST\n");
        return 2;
    }
    mpirun_path = argv[1];
    trainer_path = argv[2];
    trainer_mpi_path = argv[3];
    emu_dir = argv[4];
    tool_path = argv[5];
    policy_path = argv[6];
    train_images = argv[7];
    test_images = argv[8];
    if (atoi(train_images) < BATCH || atoi(train_images) % BATCH != 0 ||
        atoi(test_images) < BATCH || atoi(test_images) % BATCH != 0) {
        fprintf(stderr, "test_trainer_mpi: TRAIN and TEST are multiples of "
                "%d\n", BATCH);
        return 2;
    }
    if (stat(FMNIST_DIR "/train-images-idx3-ubyte.gz", &st) != 0) {
        fprintf(stderr, "Fashion-MNIST is not in " FMNIST_DIR ": install "
                "the Debian package dataset-fashion-mnist\n");
        return 1;
    }
    return cmocka_run_group_tests_name("trainer_mpi", tests, NULL, NULL);
}
