/* `ampshim run`: runs a program with libampshim.so preloaded and the
 * settings passed as AMPSHIM_* variables, like `nsys profile`, and exits
 * with the program's status. */
#include "tool/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AMP_INSTALL_LIBDIR
#define AMP_INSTALL_LIBDIR "/usr/local/lib"
#endif

const char amp_tool_run_help[] =
    "usage: ampshim run [--policy FILE] [--mode MODE] [--report FILE]\n"
    "                   [--trace FILE] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with libampshim.so preloaded (LD_PRELOAD, after any\n"
    "library already preloaded) and exits with its status (128 + N when\n"
    "signal N killed it, as a shell reports it).\n"
    "\n"
    "  --policy FILE   the policy (AMPSHIM_POLICY)\n"
    "  --mode MODE     every call in MODE, overriding the policy\n"
    "                  (AMPSHIM_MODE: fp32, fp16, bf16, tf32, fp16x3,\n"
    "                  allow-conversion, shadow, shadow:MODE)\n"
    "  --report FILE   the JSON report (AMPSHIM_REPORT; 'off' for none;\n"
    "                  default ampshim-PROGRAM-PID.json in the working\n"
    "                  directory; an existing file is never replaced)\n"
    "  --trace FILE    a Chrome/Perfetto trace (AMPSHIM_TRACE)\n"
    "\n"
    "The library is AMPSHIM_LIBRARY when set, else libampshim.so next to\n"
    "this tool, in ../hooks (a build tree), or in " AMP_INSTALL_LIBDIR ".\n"
    "Options after PROGRAM are the program's. Exit status: PROGRAM's, or\n"
    "125 when nothing ran: no library, a usage error, or PROGRAM could not\n"
    "be started (not found, not executable: the message says which).\n";

/* Writes the library's path into out; 0, or -1 when none is found. */
static int
amp_run_library(char *out, size_t cap)
{
    const char *env = getenv("AMPSHIM_LIBRARY");
    char self[PATH_MAX], *slash;
    const char *const places[] = {"/libampshim.so", "/../hooks/libampshim.so",
                                  NULL};
    ssize_t n;
    int i;

    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        for (i = 0; places[i]; i++) {
            char candidate[PATH_MAX + 64];

            snprintf(candidate, sizeof candidate, "%s%s", self, places[i]);
            if (access(candidate, R_OK) == 0 &&
                realpath(candidate, out) != NULL)
                return 0;
        }
    }
    snprintf(out, cap, "%s/libampshim.so", AMP_INSTALL_LIBDIR);
    return access(out, R_OK) == 0 ? 0 : -1;
}

/* 0, or 2 after a usage message (1 after --help); *first: the argv index
 * of the program. */
static int
amp_run_parse(int argc, char **argv, struct amp_run_options *o, int *first)
{
    static const char *const names[] = {"--policy", "--mode", "--report",
                                        "--trace"};
    int i, k;

    memset(o, 0, sizeof *o);
    for (i = 1; i < argc; i++) {
        const char **slot[] = {&o->policy, &o->mode, &o->report, &o->trace};

        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("%s", amp_tool_run_help);
            return 1;
        }
        if (argv[i][0] != '-')
            break;
        for (k = 0; k < 4; k++) {
            size_t len = strlen(names[k]);

            if (strcmp(argv[i], names[k]) == 0 && i + 1 < argc) {
                *slot[k] = argv[++i];
                break;
            }
            if (strncmp(argv[i], names[k], len) == 0 && argv[i][len] == '=') {
                *slot[k] = argv[i] + len + 1;
                break;
            }
        }
        if (k == 4) {
            fprintf(stderr, "ampshim run: unknown option or missing value: "
                    "%s\n%s", argv[i], amp_tool_run_help);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "ampshim run: no program to run\n%s",
                amp_tool_run_help);
        return 2;
    }
    *first = i;
    return 0;
}

/* The child's environment: the settings and the preload. 0 or -1. */
static int
amp_run_environment(const struct amp_run_options *o, const char *library)
{
    const char *preload = getenv("LD_PRELOAD");
    char *value;
    int rc = 0;

    /* After the libraries already preloaded: a sanitizer's runtime must
     * stay first. */
    if (preload && *preload) {
        if (asprintf(&value, "%s %s", preload, library) < 0)
            return -1;
    } else if (!(value = strdup(library))) {
        return -1;
    }
    rc |= setenv("LD_PRELOAD", value, 1);
    free(value);
    if (o->policy)
        rc |= setenv("AMPSHIM_POLICY", o->policy, 1);
    if (o->mode)
        rc |= setenv("AMPSHIM_MODE", o->mode, 1);
    if (o->report)
        rc |= setenv("AMPSHIM_REPORT", o->report, 1);
    if (o->trace)
        rc |= setenv("AMPSHIM_TRACE", o->trace, 1);
    return rc;
}

/* The status a shell would give for the child's end. */
static int
amp_run_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return AMP_RUN_FAILED;
}

/* Names the report the program wrote, when it is where it should be. */
static void
amp_run_tell_report(const struct amp_run_options *o, const char *program,
                    pid_t pid)
{
    const char *base = strrchr(program, '/');
    char path[PATH_MAX];
    struct stat st;

    if (o->report && strcmp(o->report, "off") == 0)
        return;
    if (o->report)
        snprintf(path, sizeof path, "%s", o->report);
    else
        snprintf(path, sizeof path, "ampshim-%s-%d.json",
                 base ? base + 1 : program, (int)pid);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        fprintf(stderr, "ampshim: report: %s (ampshim report %s)\n", path,
                path);
}

/* The child: the program, or its exec's errno written to `failed` (a
 * close-on-exec pipe that a successful exec closes unwritten). */
static void
amp_run_child(char **argv, int failed, void (*old_int)(int),
              void (*old_quit)(int))
{
    int saved;

    signal(SIGINT, old_int);
    signal(SIGQUIT, old_quit);
    execvp(argv[0], argv);
    saved = errno;
    /* A failed write leaves the parent the status 125 alone. */
    while (write(failed, &saved, sizeof saved) < 0 && errno == EINTR)
        continue;
    _exit(AMP_RUN_FAILED);
}

/* The errno of the child's failed exec, or 0 when the program runs. */
static int
amp_run_exec_errno(int failed)
{
    int saved = 0;
    ssize_t n;

    do
        n = read(failed, &saved, sizeof saved);
    while (n < 0 && errno == EINTR);
    close(failed);
    return n == (ssize_t)sizeof saved ? saved : 0;
}

int
amp_tool_launch(const struct amp_run_options *o, char **argv)
{
    char library[PATH_MAX];
    int status = 0, exec_errno, failed[2];
    void (*old_int)(int), (*old_quit)(int);
    pid_t pid;

    if (amp_run_library(library, sizeof library) != 0) {
        fprintf(stderr, "ampshim: cannot find libampshim.so (%s); set "
                "AMPSHIM_LIBRARY\n", library);
        return AMP_RUN_FAILED;
    }
    if (amp_run_environment(o, library) != 0) {
        perror("ampshim: environment");
        return AMP_RUN_FAILED;
    }
    if (pipe2(failed, O_CLOEXEC) != 0) {
        perror("ampshim: pipe");
        return AMP_RUN_FAILED;
    }
    /* Ctrl-C is the program's to handle; the tool waits for it. */
    old_int = signal(SIGINT, SIG_IGN);
    old_quit = signal(SIGQUIT, SIG_IGN);
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        perror("ampshim: fork");
        close(failed[0]);
        close(failed[1]);
        signal(SIGINT, old_int);
        signal(SIGQUIT, old_quit);
        return AMP_RUN_FAILED;
    }
    if (pid == 0) {
        close(failed[0]);
        amp_run_child(argv, failed[1], old_int, old_quit);
    }
    close(failed[1]);
    exec_errno = amp_run_exec_errno(failed[0]);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("ampshim: waitpid");
            return AMP_RUN_FAILED;
        }
    }
    signal(SIGINT, old_int);
    signal(SIGQUIT, old_quit);
    if (exec_errno) {
        fprintf(stderr, "ampshim: cannot run %s: %s; nothing ran\n",
                argv[0], strerror(exec_errno));
        return AMP_RUN_FAILED;
    }
    /* A shell's statuses for a program it could not run, here from the
     * program itself (127: also the dynamic loader's when a library or
     * symbol is missing). */
    if (WIFEXITED(status) && WEXITSTATUS(status) >= 126 &&
        WEXITSTATUS(status) <= 127)
        fprintf(stderr, "ampshim: %s ran and exited with status %d\n",
                argv[0], WEXITSTATUS(status));
    if (o->tell_report)
        amp_run_tell_report(o, argv[0], pid);
    return amp_run_status(status);
}

int
amp_tool_run(int argc, char **argv)
{
    struct amp_run_options o;
    int first = 0, rc = amp_run_parse(argc, argv, &o, &first);

    if (rc != 0)
        return rc == 1 ? 0 : AMP_RUN_FAILED;
    o.tell_report = 1;
    return amp_tool_launch(&o, argv + first);
}
