/* Test harness: controlled child processes and the parsers for what
 * sgemm_check and the shim print. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- Environment --------------------------------------------------------- */

/* Inherited from the test runner: where programs are, and sanitizer
 * settings of an instrumented build. */
static const char *const inherited[] = {
    "PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
};

void
amp_test_env_init(struct amp_test_env *env)
{
    memset(env, 0, sizeof(*env));
    for (size_t i = 0; i < sizeof(inherited) / sizeof(inherited[0]); i++) {
        const char *value = getenv(inherited[i]);

        if (value)
            amp_test_env_set(env, inherited[i], value);
    }
    if (!getenv("PATH"))
        amp_test_env_set(env, "PATH", "/usr/bin:/bin");
    /* No report file in the test's directory unless a test asks for one
     * (amp_test_env_set replaces this). */
    amp_test_env_set(env, "AMPSHIM_REPORT", "off");
    /* Every call in a converting mode converts, as the mode tests check
     * byte by byte, unless a test asks for the baseline shadow call of
     * each (site, shape) (AMPSHIM_BASELINE=first, the shim's default). */
    amp_test_env_set(env, "AMPSHIM_BASELINE", "off");
}

void
amp_test_env_set(struct amp_test_env *env, const char *name,
                 const char *value)
{
    /* A sanitized build's shim needs the sanitizer runtime loaded before
     * it: the test setup of such a build names the runtime here. */
    const char *first = getenv("AMP_TEST_PRELOAD_FIRST");
    size_t len = strlen(name);
    char *var;
    int i;

    if (strcmp(name, "LD_PRELOAD") == 0 && first && *first &&
        strncmp(value, first, strlen(first)) != 0) {
        if (asprintf(&var, "%s=%s %s", name, first, value) < 0)
            abort();
    } else if (asprintf(&var, "%s=%s", name, value) < 0) {
        abort();
    }
    for (i = 0; i < env->count; i++) {
        if (strncmp(env->vars[i], name, len) == 0 &&
            env->vars[i][len] == '=') {
            free(env->vars[i]);
            env->vars[i] = var;
            return;
        }
    }
    if (env->count == AMP_TEST_ENV_MAX)
        abort();
    env->vars[env->count++] = var;
    env->vars[env->count] = NULL;
}

void
amp_test_env_free(struct amp_test_env *env)
{
    for (int i = 0; i < env->count; i++)
        free(env->vars[i]);
    memset(env, 0, sizeof(*env));
}

/* ---- Running a program --------------------------------------------------- */

/* An unlinked temporary file for a child's output; -1 on failure. */
static int
capture_file(void)
{
    const char *dir = getenv("TMPDIR");
    char *path;
    int fd;

    if (!dir || !*dir)
        dir = "/tmp";
    if (asprintf(&path, "%s/amp-test-XXXXXX", dir) < 0)
        return -1;
    fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    free(path);
    return fd;
}

/* Reads fd from its start into a NUL-terminated buffer. */
static char *
slurp_fd(int fd, size_t *len)
{
    size_t size = 4096, used = 0;
    char *buf = malloc(size);
    ssize_t n;

    if (!buf || lseek(fd, 0, SEEK_SET) < 0)
        abort();
    while ((n = read(fd, buf + used, size - used - 1)) > 0) {
        used += (size_t)n;
        if (size - used < 2) {
            size *= 2;
            buf = realloc(buf, size);
            if (!buf)
                abort();
        }
    }
    buf[used] = '\0';
    *len = used;
    return buf;
}

/* Waits for pid for at most timeout_s seconds, then kills it. */
static void
wait_child(pid_t pid, int timeout_s, struct amp_test_run *run)
{
    struct timespec step = { 0, 5 * 1000 * 1000 };
    long waited_ms = 0;
    int status = 0;
    pid_t r;

    for (;;) {
        r = waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            break;
        if (waited_ms >= (long)timeout_s * 1000) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            run->timed_out = 1;
            break;
        }
        nanosleep(&step, NULL);
        waited_ms += 5;
    }
    if (WIFEXITED(status)) {
        run->exited = 1;
        run->code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        run->signaled = 1;
        run->signo = WTERMSIG(status);
    }
}

int
amp_test_run(char *const argv[], const struct amp_test_env *env,
             int timeout_s, struct amp_test_run *run)
{
    posix_spawn_file_actions_t actions;
    int out_fd, err_fd, rc = -1, spawn_err;

    memset(run, 0, sizeof(*run));
    out_fd = capture_file();
    err_fd = capture_file();
    if (out_fd < 0 || err_fd < 0)
        goto out;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    spawn_err = posix_spawn(&run->pid, argv[0], &actions, NULL, argv,
                            (char *const *)env->vars);
    posix_spawn_file_actions_destroy(&actions);
    if (spawn_err != 0) {
        errno = spawn_err;
        goto out;
    }
    wait_child(run->pid, timeout_s, run);
    run->out = slurp_fd(out_fd, &run->out_len);
    run->err = slurp_fd(err_fd, &run->err_len);
    rc = 0;
out:
    if (out_fd >= 0)
        close(out_fd);
    if (err_fd >= 0)
        close(err_fd);
    return rc;
}

void
amp_test_run_free(struct amp_test_run *run)
{
    free(run->out);
    free(run->err);
    memset(run, 0, sizeof(*run));
}

void
amp_test_run_dump(const char *what, const struct amp_test_run *run)
{
    fprintf(stderr, "---- %s: pid %d, ", what, (int)run->pid);
    if (run->timed_out)
        fprintf(stderr, "TIMED OUT, ");
    if (run->exited)
        fprintf(stderr, "exit %d\n", run->code);
    else if (run->signaled)
        fprintf(stderr, "signal %d (%s)\n", run->signo,
                strsignal(run->signo));
    else
        fprintf(stderr, "no status\n");
    fprintf(stderr, "---- stdout:\n%s---- stderr:\n%s---- end of %s\n",
            run->out ? run->out : "", run->err ? run->err : "", what);
}

/* ---- sgemm_check's output ------------------------------------------------ */

/* Parses one "case" line into c; returns 0 or -1. The api= and class=
 * fields after the verdict are optional. */
static int
parse_case_line(const char *line, struct amp_test_case *c)
{
    char ratio[32], verdict[16];
    const char *field;
    int n;

    memset(c, 0, sizeof(*c));
    n = sscanf(line,
               "case %63s m=%d n=%d k=%d op=%2s status=%*[A-Z_](%d) "
               "err/bound=%31s hash=%16s %15s",
               c->name, &c->m, &c->n, &c->k, c->ops, &c->status, ratio,
               c->hash, verdict);
    if (n != 9)
        return -1;
    c->ok = strcmp(verdict, "ok") == 0;
    c->ratio = strcmp(ratio, "-") == 0 ? -1.0 : strtod(ratio, NULL);
    field = strstr(line, " api=");
    if (field && sscanf(field, " api=%63s", c->api) != 1)
        return -1;
    field = strstr(line, " class=");
    if (field && sscanf(field, " class=%15s", c->cls) != 1)
        return -1;
    return 0;
}

int
amp_test_parse_check(const char *out, struct amp_test_check *check)
{
    const char *line = out;

    memset(check, 0, sizeof(*check));
    while (line && *line) {
        const char *next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        char buf[512];

        if (len >= sizeof(buf))
            return -1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        if (strncmp(buf, "case ", 5) == 0) {
            if (check->count == AMP_TEST_MAX_CASES ||
                parse_case_line(buf, &check->cases[check->count]) != 0)
                return -1;
            check->count++;
        } else if (strncmp(buf, "result: ", 8) == 0) {
            check->have_result = 1;
        }
        line = next ? next + 1 : NULL;
    }
    return 0;
}

int
amp_test_eligible(const struct amp_test_case *c)
{
    return c->m > 0 && c->n > 0 && c->k > 0;
}

int
amp_test_count_eligible(const struct amp_test_check *check)
{
    int n = 0;

    for (int i = 0; i < check->count; i++)
        n += amp_test_eligible(&check->cases[i]);
    return n;
}

/* ---- The shim's exit summary --------------------------------------------- */

static void
summary_add(struct amp_test_summary *sum,
            const struct amp_test_summary_line *l)
{
    for (int i = 0; i < sum->count; i++) {
        if (strcmp(sum->lines[i].api, l->api) == 0) {
            sum->lines[i].seen++;
            return;
        }
    }
    if (sum->count == AMP_TEST_MAX_APIS)
        return;
    sum->lines[sum->count] = *l;
    sum->lines[sum->count].seen = 1;
    sum->count++;
}

/* One error field of a summary line: a number when elements were
 * compared, "-" (NAN) when none was; -1 when it is neither. */
static int
summary_error(const char *text, long compared, double *out)
{
    char *end;

    if (compared == 0) {
        *out = NAN;
        return strcmp(text, "-") == 0 ? 0 : -1;
    }
    *out = strtod(text, &end);
    return end != text && *end == '\0' ? 0 : -1;
}

void
amp_test_parse_summary(const char *text, struct amp_test_summary *sum)
{
    const char *line = text;

    memset(sum, 0, sizeof(*sum));
    while (line && *line) {
        const char *next = strchr(line, '\n');
        size_t len = next ? (size_t)(next - line) : strlen(line);
        struct amp_test_summary_line l;
        char buf[512];
        int end = -1;

        if (len >= sizeof(buf))
            len = sizeof(buf) - 1;
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = next ? next + 1 : NULL;
        if (strncmp(buf, "ampshim[", 8) != 0 || !strstr(buf, "]: summary "))
            continue;
        sum->summary_lines++;
        memset(&l, 0, sizeof(l));
        if (sscanf(buf,
                   "ampshim[%d]: summary %63s calls=%ld converted=%ld "
                   "fp32=%ld fallback=%ld passthrough=%ld%n",
                   &l.pid, l.api, &l.calls, &l.converted, &l.fp32,
                   &l.fallback, &l.passthrough, &end) != 7) {
            sum->malformed++;
            continue;
        }
        if (end != (int)len) {
            char abs_err[32], rel_err[32], fro_err[32];
            int more = -1;

            l.has_shadow = sscanf(buf + end,
                                  " shadow=%ld max_abs_err=%31s "
                                  "max_rel_err=%31s nonfinite=%ld "
                                  "fro_rel_err=%31s compared=%ld%n",
                                  &l.shadow, abs_err, rel_err, &l.nonfinite,
                                  fro_err, &l.compared, &more) == 6;
            if (!l.has_shadow || end + more != (int)len ||
                summary_error(abs_err, l.compared, &l.max_abs_err) != 0 ||
                summary_error(rel_err, l.compared, &l.max_rel_err) != 0 ||
                summary_error(fro_err, l.compared, &l.fro_rel_err) != 0) {
                sum->malformed++;
                continue;
            }
        }
        summary_add(sum, &l);
    }
}

const struct amp_test_summary_line *
amp_test_summary_find(const struct amp_test_summary *sum, const char *api)
{
    for (int i = 0; i < sum->count; i++)
        if (strcmp(sum->lines[i].api, api) == 0)
            return &sum->lines[i];
    return NULL;
}

int
amp_test_count_lines_with(const char *text, const char *needle)
{
    const char *line = text;
    int n = 0;

    while (line && *line) {
        const char *next = strchr(line, '\n');
        const char *hit = strstr(line, needle);

        if (hit && (!next || hit < next))
            n++;
        line = next ? next + 1 : NULL;
    }
    return n;
}

char *
amp_test_read_file(const char *path)
{
    size_t len;
    char *buf;
    int fd = open(path, O_RDONLY);

    if (fd < 0)
        return NULL;
    buf = slurp_fd(fd, &len);
    close(fd);
    return buf;
}
