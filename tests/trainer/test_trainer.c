/* The legacy trainer on the CPU device emulator, without the shim: its
 * output format, that a short training lowers the loss and beats chance,
 * that a seed fixes the whole output, and its errors for missing,
 * damaged or short data and bad options.
 *
 * usage: test_trainer training|errors LEGACY_TRAINER EMU_DIR */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* 256 images at a few dozen a second on one emulated CPU core, plus
 * room for a loaded machine. */
#define RUN_TIMEOUT_S 300
#define MAX_STEPS 64
#define MAX_EPOCHS 4
#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"
#define PACKAGE "dataset-fashion-mnist"

static const char *trainer_path;
static const char *emu_dir;

/* What the trainer printed, line by line. */
struct epoch_line {
    int epoch;
    double loss, train_acc, test_acc, images_per_s, device_ms;
};

struct trainer_out {
    char device[128];
    char timing[16];
    int steps;
    double step_loss[MAX_STEPS];
    int epochs;
    struct epoch_line epoch[MAX_EPOCHS];
    int has_final;
    double final_loss, final_acc;
    int other_lines;     /* lines of no known form */
};

/* One line; the whole line must match one form. */
static void
parse_line(const char *line, struct trainer_out *t)
{
    struct epoch_line *e = &t->epoch[t->epochs];
    int end = -1, ep, step;
    double loss;

    if (sscanf(line, "device %127[^\n]%n", t->device, &end) == 1 &&
        line[end] == '\0')
        return;
    end = -1;
    if (sscanf(line, "timing %15s%n", t->timing, &end) == 1 &&
        line[end] == '\0')
        return;
    end = -1;
    if (sscanf(line, "step %d %d loss %lf%n", &ep, &step, &loss, &end) == 3 &&
        line[end] == '\0' && t->steps < MAX_STEPS && step == t->steps + 1) {
        t->step_loss[t->steps++] = loss;
        return;
    }
    end = -1;
    if (t->epochs < MAX_EPOCHS &&
        sscanf(line, "epoch %d loss %lf train_acc %lf test_acc %lf "
               "images_per_s %lf device_ms %lf%n", &e->epoch, &e->loss,
               &e->train_acc, &e->test_acc, &e->images_per_s, &e->device_ms,
               &end) == 6 && line[end] == '\0') {
        t->epochs++;
        return;
    }
    end = -1;
    if (!t->has_final &&
        sscanf(line, "final loss %lf test_acc %lf%n", &t->final_loss,
               &t->final_acc, &end) == 2 && line[end] == '\0') {
        t->has_final = 1;
        return;
    }
    t->other_lines++;
}

static void
parse_output(const char *out, struct trainer_out *t)
{
    char *copy = strdup(out), *save = NULL;

    assert_non_null(copy);
    memset(t, 0, sizeof(*t));
    for (char *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save))
        parse_line(line, t);
    free(copy);
}

/* The output with every images_per_s value (host wall time, of any
 * number of digits) replaced by one '#': the rest must be the same for the
 * same seed. */
static char *
without_wall_time(const char *out)
{
    static const char key[] = "images_per_s ";
    char *copy = strdup(out), *to = copy;

    assert_non_null(copy);
    for (const char *from = out; *from != '\0';) {
        if (strncmp(from, key, strlen(key)) == 0) {
            memcpy(to, key, strlen(key));
            to += strlen(key);
            from += strlen(key);
            *to++ = '#';
            while (*from != '\0' && *from != ' ' && *from != '\n')
                from++;
        } else {
            *to++ = *from++;
        }
    }
    *to = '\0';
    return copy;
}

/* Runs the trainer on the emulator with `args` (NULL-terminated). */
static void
run_trainer(const char *const *args, struct amp_test_run *run)
{
    char *argv[32];
    struct amp_test_env env;
    int n = 0;

    argv[n++] = (char *)trainer_path;
    while (*args != NULL && n < 31)
        argv[n++] = (char *)*args++;
    argv[n] = NULL;
    amp_test_env_init(&env);
    amp_test_env_set(&env, "LD_LIBRARY_PATH", emu_dir);
    assert_int_equal(amp_test_run(argv, &env, RUN_TIMEOUT_S, run), 0);
    amp_test_env_free(&env);
}

static void
expect_exit(const char *what, const struct amp_test_run *run, int code)
{
    if (!run->exited || run->code != code)
        amp_test_run_dump(what, run);
    assert_true(run->exited);
    assert_int_equal(run->code, code);
}

/* The short training every group below runs: 16 steps of 16 images, a
 * small configuration (128 hidden units, lr 0.004) rather than the
 * defaults, which are sized for Tensor Cores. */
static const char *const short_run[] = {
    "--train", "256", "--test", "256", "--epochs", "1", "--batch-size", "16",
    "--hidden", "128", "--lr", "0.004", "--seed", "7", "--verbose", NULL,
};

static struct amp_test_run first;
static struct trainer_out first_out;

static int
setup_first(void **state)
{
    struct stat st;

    if (stat(FMNIST_DIR "/train-images-idx3-ubyte.gz", &st) != 0) {
        fprintf(stderr, "Fashion-MNIST is not in " FMNIST_DIR ": install "
                "the Debian package " PACKAGE " (scripts/setup.sh does)\n");
        return -1;
    }
    run_trainer(short_run, &first);
    parse_output(first.out, &first_out);
    return 0;
}

static int
teardown_first(void **state)
{
    amp_test_run_free(&first);
    return 0;
}

/* Every line has its form; the epoch line agrees with the steps and the
 * final line with the epoch. */
static void
test_output_format(void **state)
{
    const struct trainer_out *t = &first_out;
    const struct epoch_line *e = &t->epoch[0];
    double sum = 0.0;

    expect_exit("short run", &first, 0);
    assert_string_equal(first.err, "");
    assert_int_equal(t->other_lines, 0);
    assert_non_null(strstr(t->device, "(emulated)"));
    assert_string_equal(t->timing, "emulated");
    assert_int_equal(t->steps, 256 / 16);
    assert_int_equal(t->epochs, 1);
    assert_int_equal(e->epoch, 1);
    for (int i = 0; i < t->steps; i++)
        sum += t->step_loss[i];
    /* Four decimals printed: the mean of the rounded steps is within
     * 0.5e-4 + the epoch's own rounding. */
    assert_true(fabs(sum / t->steps - e->loss) < 1.1e-4);
    assert_true(e->train_acc >= 0.0 && e->train_acc <= 100.0);
    /* 256 test images: a multiple of 1/256 (printed to 0.01). */
    assert_true(fabs(e->test_acc * 2.56 - (double)(long)(e->test_acc * 2.56
                + 0.5)) < 0.02);
    assert_true(e->images_per_s > 0.0);
    assert_true(e->device_ms > 0.0);
    assert_true(t->has_final);
    assert_true(t->final_loss == e->loss);
    assert_true(t->final_acc == e->test_acc);
}

/* 16 steps from random weights: the first four steps' loss is near
 * ln 10 (2.30 for uniform guesses; the initial weights give logits of
 * about unit spread, and the emulator 2.62), the last four's at most 85 %
 * of it (the emulator gives 65 %), and the test accuracy three times
 * chance. */
static void
test_learns(void **state)
{
    const struct trainer_out *t = &first_out;
    double head = 0.0, tail = 0.0;

    assert_int_equal(t->steps, 16);
    for (int i = 0; i < 4; i++) {
        head += t->step_loss[i] / 4;
        tail += t->step_loss[t->steps - 1 - i] / 4;
    }
    if (!(tail < 0.85 * head) || !(t->epoch[0].test_acc > 30.0))
        amp_test_run_dump("short run", &first);
    assert_true(head > 2.0 && head < 2.8);
    assert_true(tail < 0.85 * head);
    assert_true(t->epoch[0].test_acc > 30.0);
}

/* The same seed gives the same output, byte for byte but for the wall
 * time; another seed gives other losses. */
static void
test_deterministic(void **state)
{
    static const char *const other_seed[] = {
        "--train", "256", "--test", "256", "--epochs", "1", "--batch-size",
        "16", "--hidden", "128", "--lr", "0.004", "--seed", "8", "--verbose",
        NULL,
    };
    struct amp_test_run again, other;
    struct trainer_out other_out;
    char *a, *b;

    run_trainer(short_run, &again);
    expect_exit("same seed", &again, 0);
    a = without_wall_time(first.out);
    b = without_wall_time(again.out);
    if (strcmp(a, b) != 0) {
        print_error("same seed, different output:\n%s\n---\n%s\n", a, b);
        free(a);
        free(b);
        fail();
    }
    free(a);
    free(b);
    amp_test_run_free(&again);

    run_trainer(other_seed, &other);
    expect_exit("other seed", &other, 0);
    parse_output(other.out, &other_out);
    assert_int_equal(other_out.steps, 16);
    assert_true(other_out.step_loss[0] != first_out.step_loss[0]);
    assert_true(other_out.epoch[0].loss != first_out.epoch[0].loss);
    amp_test_run_free(&other);
}

/* ---- Data errors, on files the test writes ------------------------------- */

struct temp_dir {
    char path[64];
};

static void
temp_dir_make(struct temp_dir *d)
{
    snprintf(d->path, sizeof(d->path), "/tmp/test_trainer.XXXXXX");
    assert_non_null(mkdtemp(d->path));
}

static void
temp_dir_remove(struct temp_dir *d)
{
    static const char *const names[] = {
        "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
    };
    char path[128];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", d->path, names[i]);
        unlink(path);
    }
    rmdir(d->path);
}

static void
put_be32(FILE *f, uint32_t v)
{
    unsigned char b[4] = { v >> 24, v >> 16, v >> 8, v };

    assert_int_equal(fwrite(b, 1, 4, f), 4);
}

/* An uncompressed IDX pair of `count` images: pixel values from the
 * label, labels cycling through the classes. `magic` of the image file
 * (0x803 when valid). */
static void
write_split(const struct temp_dir *d, const char *split, int count,
            uint32_t magic)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s-images-idx3-ubyte", d->path, split);
    f = fopen(path, "wb");
    assert_non_null(f);
    put_be32(f, magic);
    put_be32(f, (uint32_t)count);
    put_be32(f, 28);
    put_be32(f, 28);
    for (int i = 0; i < count * 28 * 28; i++)
        fputc((i / (28 * 28) % 10) * 25 + i % 7, f);
    assert_int_equal(fclose(f), 0);

    snprintf(path, sizeof(path), "%s/%s-labels-idx1-ubyte", d->path, split);
    f = fopen(path, "wb");
    assert_non_null(f);
    put_be32(f, 0x801);
    put_be32(f, (uint32_t)count);
    for (int i = 0; i < count; i++)
        fputc(i % 10, f);
    assert_int_equal(fclose(f), 0);
}

/* An empty directory: a non-zero status before any device work, and a
 * message that names the package and the directory looked in. */
static void
test_missing_data(void **state)
{
    struct temp_dir d;
    struct amp_test_run run;
    const char *args[] = { "--train", "64", "--test", "64", "--batch-size",
                           "16", "--data-dir", NULL, NULL };

    temp_dir_make(&d);
    args[7] = d.path;
    run_trainer(args, &run);
    expect_exit("empty data dir", &run, 4);
    assert_string_equal(run.out, "");
    assert_non_null(strstr(run.err, PACKAGE));
    assert_non_null(strstr(run.err, d.path));
    assert_non_null(strstr(run.err, "train-images-idx3-ubyte"));
    amp_test_run_free(&run);
    temp_dir_remove(&d);
}

/* Plain (not gzip) IDX files are read too; a file with the wrong magic
 * or fewer images than asked for is refused with status 2 and says so. */
static void
test_damaged_and_plain_data(void **state)
{
    struct temp_dir d;
    struct amp_test_run run;
    struct trainer_out t;
    const char *args[] = { "--train", "32", "--test", "20", "--batch-size",
                           "16", "--hidden", "128", "--epochs", "1",
                           "--data-dir", NULL, NULL };

    temp_dir_make(&d);
    args[11] = d.path;
    write_split(&d, "train", 32, 0x803);
    write_split(&d, "t10k", 20, 0x803);
    run_trainer(args, &run);
    expect_exit("plain IDX files", &run, 0);
    parse_output(run.out, &t);
    assert_int_equal(t.other_lines, 0);
    assert_int_equal(t.epochs, 1);
    /* 20 test images: one full batch and one padded one. */
    assert_true(fabs(t.epoch[0].test_acc * 0.2 -
                     (double)(long)(t.epoch[0].test_acc * 0.2 + 0.5)) < 1e-6);
    amp_test_run_free(&run);

    args[1] = "33";
    run_trainer(args, &run);
    expect_exit("too few images", &run, 2);
    assert_non_null(strstr(run.err, "holds 32 items, 33 asked for"));
    amp_test_run_free(&run);

    args[1] = "32";
    write_split(&d, "t10k", 20, 0x804);
    run_trainer(args, &run);
    expect_exit("bad magic", &run, 2);
    assert_non_null(strstr(run.err, "t10k-images-idx3-ubyte: not an IDX "
                           "file"));
    amp_test_run_free(&run);
    temp_dir_remove(&d);
}

/* --help lists every option and exits 0; a bad value exits 2 naming the
 * option. */
static void
test_options(void **state)
{
    static const char *const options[] = {
        "--epochs", "--batch-size", "--hidden", "--lr", "--momentum",
        "--train",
        "--test", "--seed", "--data-dir", "--verbose", "--help",
    };
    const char *help[] = { "--help", NULL };
    const char *bad[] = { "--momentum", "1.5", NULL };
    const char *bad_hidden[] = { "--hidden", "0", NULL };
    const char *small[] = { "--train", "8", "--batch-size", "16", NULL };
    struct amp_test_run run;

    run_trainer(help, &run);
    expect_exit("--help", &run, 0);
    for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++)
        assert_non_null(strstr(run.out, options[i]));
    assert_non_null(strstr(run.out, PACKAGE));
    amp_test_run_free(&run);

    run_trainer(bad, &run);
    expect_exit("--momentum 1.5", &run, 2);
    assert_non_null(strstr(run.err, "--momentum"));
    assert_string_equal(run.out, "");
    amp_test_run_free(&run);

    run_trainer(bad_hidden, &run);
    expect_exit("--hidden 0", &run, 2);
    assert_non_null(strstr(run.err, "--hidden wants a whole number from 1 "
                           "to 16384, not '0'"));
    amp_test_run_free(&run);

    run_trainer(small, &run);
    expect_exit("--train below --batch-size", &run, 2);
    assert_non_null(strstr(run.err, "--train 8"));
    amp_test_run_free(&run);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest training[] = {
        cmocka_unit_test(test_output_format),
        cmocka_unit_test(test_learns),
        cmocka_unit_test(test_deterministic),
    };
    const struct CMUnitTest errors[] = {
        cmocka_unit_test(test_missing_data),
        cmocka_unit_test(test_damaged_and_plain_data),
        cmocka_unit_test(test_options),
    };

    if (argc != 4) {
        fprintf(stderr, "usage: test_trainer training|errors "
                "LEGACY_TRAINER EMU_DIR\n");
        return 2;
    }
    trainer_path = argv[2];
    emu_dir = argv[3];
    if (strcmp(argv[1], "training") == 0)
        return cmocka_run_group_tests_name("trainer_training", training,
                                           setup_first, teardown_first);
    if (strcmp(argv[1], "errors") == 0)
        return cmocka_run_group_tests_name("trainer_errors", errors, NULL,
                                           NULL);
    fprintf(stderr, "test_trainer: unknown group %s\n", argv[1]);
    return 2;
}
