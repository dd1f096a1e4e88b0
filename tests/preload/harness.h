/* Test harness for the preload and ABI tests: runs a program in a
 * controlled environment, captures its output, and parses what the
 * example programs (sgemm_check, gemm_suite, legacy_sgemm) and the shim's
 * exit summary print. */
#ifndef AMP_TEST_HARNESS_H
#define AMP_TEST_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

/* ---- Environment --------------------------------------------------------- */

#define AMP_TEST_ENV_MAX 32

/* A child's whole environment: nothing is inherited but PATH (and the
 * sanitizer options, if any), so stray AMPSHIM_* or LD_* variables of the
 * caller cannot change a test. It starts with AMPSHIM_REPORT=off and
 * AMPSHIM_BASELINE=off (no baseline shadow calls); a test sets them to
 * have them. */
struct amp_test_env {
    char *vars[AMP_TEST_ENV_MAX + 1];
    int count;
};

void amp_test_env_init(struct amp_test_env *env);
/* Sets NAME=value, replacing an earlier NAME. LD_PRELOAD gets the
 * sanitizer runtime named by AMP_TEST_PRELOAD_FIRST (a sanitized build's
 * test setup) in front of value. */
void amp_test_env_set(struct amp_test_env *env, const char *name,
                      const char *value);
void amp_test_env_free(struct amp_test_env *env);

/* ---- Running a program --------------------------------------------------- */

struct amp_test_run {
    pid_t pid;
    int exited;       /* exited normally: code is valid */
    int code;
    int signaled;     /* killed by a signal: signo is valid */
    int signo;
    int timed_out;    /* killed by the harness after the time limit */
    char *out;        /* stdout, NUL-terminated */
    size_t out_len;
    char *err;        /* stderr, NUL-terminated */
    size_t err_len;
};

/* Runs argv[0] (a path) with exactly env's environment, stdin from
 * /dev/null, and waits at most timeout_s seconds. Returns 0, or -1 when
 * the program could not be started (errno set). */
int amp_test_run(char *const argv[], const struct amp_test_env *env,
                 int timeout_s, struct amp_test_run *run);
void amp_test_run_free(struct amp_test_run *run);

/* Prints what a run gave, for a failing test's log. */
void amp_test_run_dump(const char *what, const struct amp_test_run *run);

/* ---- The example programs' output ---------------------------------------- */

#define AMP_TEST_MAX_CASES 256

struct amp_test_case {
    char name[64];
    int m, n, k;
    char ops[3];
    int status;       /* the cublasStatus_t number */
    double ratio;     /* max error / bound; -1 for "-" */
    int ok;           /* the verdict is "ok" */
    char hash[17];    /* 16 hex digits, or "-" */
    char api[64];     /* gemm_suite, legacy_sgemm: "api=" (else "") */
    char cls[16];     /* and "class=": gemm, trivial, invalid, pedantic,
                         typed */
};

struct amp_test_check {
    int count;
    struct amp_test_case cases[AMP_TEST_MAX_CASES];
    int have_result;  /* the final "result:" line was printed */
};

/* Parses the "case ..." lines; returns 0, or -1 on a malformed one. */
int amp_test_parse_check(const char *out, struct amp_test_check *check);

/* Cases with m, n and k all positive: the ones a converting shim is
 * expected to convert (sgemm_check never uses alpha == 0). */
int amp_test_eligible(const struct amp_test_case *c);
int amp_test_count_eligible(const struct amp_test_check *check);

/* ---- The shim's exit summary --------------------------------------------- */

#define AMP_TEST_MAX_APIS 32

struct amp_test_summary_line {
    char api[64];
    int pid;
    long calls, converted, fp32, fallback, passthrough;
    /* Shadow measurements, when the line has them. */
    int has_shadow;
    long shadow, nonfinite, compared;
    double max_abs_err, max_rel_err, fro_rel_err; /* NAN: "-", nothing
                                                     was compared */
    int seen;         /* how many lines named this api */
};

struct amp_test_summary {
    int count;
    struct amp_test_summary_line lines[AMP_TEST_MAX_APIS];
    int summary_lines; /* lines that looked like "ampshim[...]: summary" */
    int malformed;     /* of those, lines that did not parse exactly */
};

/* Collects every "ampshim[<pid>]: summary <api> calls=<n> converted=<n>
 * fp32=<n> fallback=<n> passthrough=<n>" line of text, with its optional
 * " shadow=<n> max_abs_err=<x> max_rel_err=<x> nonfinite=<n>
 * fro_rel_err=<x> compared=<n>" (each <x> a number, or "-" when compared
 * is 0). */
void amp_test_parse_summary(const char *text, struct amp_test_summary *sum);

/* The line for api, or NULL. */
const struct amp_test_summary_line *
amp_test_summary_find(const struct amp_test_summary *sum, const char *api);

/* Number of lines of text that contain needle. */
int amp_test_count_lines_with(const char *text, const char *needle);

/* Reads a whole file into a NUL-terminated buffer, or NULL. */
char *amp_test_read_file(const char *path);

#endif
