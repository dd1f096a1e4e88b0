/* `ampshim run`: runs a program with libampshim.so preloaded and the
 * settings passed as AMPSHIM_* variables, like `nsys profile`, and exits
 * with the program's status. */
#include "base/config.h"
#include "base/path.h"
#include "decide/policy.h"
#include "tool/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AMP_INSTALL_LIBDIR
#define AMP_INSTALL_LIBDIR "/usr/local/lib"
#endif

const char amp_tool_run_help[] =
    "usage: ampshim run [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with libampshim.so preloaded (LD_PRELOAD, after any\n"
    "library already preloaded) and exits with its status. At PROGRAM's\n"
    "exit the shim prints a summary and a table of its call sites on\n"
    "stderr and writes a JSON report, which the tool then names.\n"
    "\n"
    "options:\n"
    "  --policy FILE   the policy (AMPSHIM_POLICY); default: the first\n"
    "                  *.policy file that matches PROGRAM in\n"
    "                  ~/.config/ampshim/policies, the XDG_CONFIG_DIRS'\n"
    "                  ampshim/policies and /etc/ampshim/policies, else\n"
    "                  the built-in policy\n"
    "  --mode MODE     every call in MODE, no policy read (AMPSHIM_MODE):\n"
    "                  fp32, fp16, bf16, tf32, fp16x3, tf32x3, bf16x9,\n"
    "                  allow-conversion, shadow, shadow:MODE; default: the\n"
    "                  policy decides\n"
    "  --tolerance X[:NORM]\n"
    "                  the largest relative error a shadow call may show\n"
    "                  before its call site stays FP32 (AMPSHIM_TOLERANCE),\n"
    "                  over the policy's 'set tolerance', under --mode too;\n"
    "                  NORM max (max |cand - fp32| / max |fp32|, the\n"
    "                  default) or fro (||cand - fp32||_F / ||fp32||_F, as\n"
    "                  a program checking its result in the L2 norm sees\n"
    "                  it; also frobenius, l2); 1e-6:fro is FP32 accuracy\n"
    "  --report FILE   the JSON report (AMPSHIM_REPORT); 'off' for none;\n"
    "                  default ampshim-PROGRAM-PID.json in the working\n"
    "                  directory (a program preloaded without 'ampshim\n"
    "                  run' writes it to $XDG_STATE_HOME/ampshim)\n"
    "  --trace FILE    a Chrome/Perfetto trace of the converted calls\n"
    "                  (AMPSHIM_TRACE); default none\n"
    "  --force         replace an existing report or trace file (the shim\n"
    "                  never replaces one itself)\n"
    "  -q, --quiet     nothing from the shim on stderr (AMPSHIM_QUIET=1),\n"
    "                  and the tool names no report\n"
    "  -h, --help      this help\n"
    "\n"
    "Options take their value as --opt VALUE or --opt=VALUE. Arguments\n"
    "after PROGRAM are PROGRAM's. In FILE, %p and %i are the process id,\n"
    "%h the host name, %r the job rank (from the launcher's variables:\n"
    "RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, SLURM_PROCID; 0\n"
    "outside a job) and %% a percent sign.\n"
    "\n"
    "Before PROGRAM starts, the tool checks the mode, the policy that\n"
    "would apply (an error is printed as FILE:LINE:COLUMN), the AMPSHIM_*\n"
    "settings in the environment, that the report, trace and log file can\n"
    "be created (their directory exists and is writable, no file is there\n"
    "without --force), that the library is found and that PROGRAM can be\n"
    "run.\n"
    "\n"
    "environment:\n"
    "  AMPSHIM_LIBRARY  the library to preload; default libampshim.so next\n"
    "                   to this tool, in ../hooks from it (a build tree),\n"
    "                   or in " AMP_INSTALL_LIBDIR "\n"
    "  AMPSHIM_*        the shim's settings (ampshim(1), ENVIRONMENT),\n"
    "                   passed on; an option replaces its variable\n"
    "  LD_PRELOAD       kept; the library is added after it\n"
    "\n"
    "exit status:\n"
    "  PROGRAM's status, or 128 + N when signal N killed it (as a shell\n"
    "  reports it); 125 when nothing ran: a usage error, a failed check,\n"
    "  no library, or PROGRAM could not be started (not found, not\n"
    "  executable: the message says which). PROGRAM's own 126 or 127 stays\n"
    "  its status, and the tool says that it ran.\n"
    "\n"
    "signals:\n"
    "  Ctrl-C reaches PROGRAM with the terminal's process group; SIGTERM\n"
    "  sent to the tool is passed to PROGRAM. Either way the tool waits\n"
    "  for PROGRAM and exits with its status: no process is left behind.\n";

/* 0, 1 after --help, or AMP_RUN_FAILED after a usage message; *first:
 * the argv index of the program. */
static int
amp_run_parse(int argc, char **argv, struct amp_run_options *o, int *force,
              int *first)
{
    static const struct option longopts[] = {
        {"policy", required_argument, NULL, 'P'},
        {"mode", required_argument, NULL, 'M'},
        {"tolerance", required_argument, NULL, 'O'},
        {"report", required_argument, NULL, 'R'},
        {"trace", required_argument, NULL, 'T'},
        {"force", no_argument, NULL, 'F'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct amp_opt opt = {"ampshim run", "+:qh", longopts, argc, argv, 0};
    int c;

    memset(o, 0, sizeof *o);
    *force = 0;
    while ((c = amp_opt_next(&opt)) != -1) {
        switch (c) {
        case 'P': o->policy = optarg; break;
        case 'M': o->mode = optarg; break;
        case 'O': o->tolerance = optarg; break;
        case 'R': o->report = optarg; break;
        case 'T': o->trace = optarg; break;
        case 'F': *force = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h':
            printf("%s", amp_tool_run_help);
            return 1;
        default:
            return AMP_RUN_FAILED;
        }
    }
    if (optind >= argc) {
        amp_opt_usage("ampshim run", "no program to run");
        return AMP_RUN_FAILED;
    }
    *first = optind;
    return 0;
}

/* The options as the shim's variables, in this process's environment
 * (the child's): 0 or -1. */
static int
amp_run_settings(const struct amp_run_options *o)
{
    int rc = 0;

    if (o->policy)
        rc |= setenv("AMPSHIM_POLICY", o->policy, 1);
    if (o->mode)
        rc |= setenv("AMPSHIM_MODE", o->mode, 1);
    if (o->tolerance)
        rc |= setenv("AMPSHIM_TOLERANCE", o->tolerance, 1);
    if (o->report)
        rc |= setenv("AMPSHIM_REPORT", o->report, 1);
    if (o->trace)
        rc |= setenv("AMPSHIM_TRACE", o->trace, 1);
    if (o->quiet)
        rc |= setenv("AMPSHIM_QUIET", "1", 1);
    return rc;
}

/* The child's environment: the settings and the preload. 0 or -1. */
static int
amp_run_environment(const struct amp_run_options *o, const char *library)
{
    const char *preload = getenv("LD_PRELOAD");
    char *value;
    int rc;

    /* After the libraries already preloaded: a sanitizer's runtime must
     * stay first. */
    if (preload && *preload) {
        if (asprintf(&value, "%s %s", preload, library) < 0)
            return -1;
    } else if (!(value = strdup(library))) {
        return -1;
    }
    rc = setenv("LD_PRELOAD", value, 1);
    free(value);
    return rc | amp_run_settings(o);
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

/* Appends text to out (at *used, cap bytes) with every '%' doubled: a
 * literal part of a path pattern. 0, or -1 when it does not fit. */
static int
amp_run_put_literal(char *out, size_t cap, size_t *used, const char *text)
{
    for (; *text; text++) {
        if (*used + 3 > cap)
            return -1;
        if (*text == '%')
            out[(*used)++] = '%';
        out[(*used)++] = *text;
    }
    out[*used] = '\0';
    return 0;
}

/* No report: the program's process made no call the shim hooks. */
static void
amp_run_tell_nothing(int status)
{
    char how[64];

    /* A program a signal killed may have made calls: the shim writes its
     * report at exit, and a first snapshot at a call 1 s after the first
     * (AMPSHIM_SNAPSHOT when shorter); it died before either. */
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "ampshim run: the program died (killed by signal "
                "%d, %s) before the shim wrote a report: before its first "
                "cuBLAS, cuBLASLt or cuDNN call, or before the first "
                "snapshot of the report (at a call 1 s after that one)\n",
                WTERMSIG(status),
                strsignal(WTERMSIG(status)));
        return;
    }
    if (WIFEXITED(status))
        snprintf(how, sizeof how, "it exited with status %d",
                 WEXITSTATUS(status));
    else
        snprintf(how, sizeof how, "it ended");
    fprintf(stderr,
            "ampshim run: the shim saw no cuBLAS, cuBLASLt or cuDNN call of "
            "the program (no report was written; %s). It may not use those "
            "libraries, may have a static copy of them (a warning before "
            "the run says so), may call them only from child processes "
            "(each writes its own report), or may have failed before its "
            "first call.\n", how);
}

/* 1 when the report's place is amp_run_default_report's. */
static int amp_run_report_default;

/* `ampshim run` keeps the report in the working directory, where the user
 * ran it (a bare preload's goes to the state directory): without
 * AMPSHIM_REPORT, the child gets CWD/ampshim-PROGRAM-%p.json, absolute so
 * that a program that changes directory writes it there too. 0 or -1. */
static int
amp_run_default_report(const char *program)
{
    const char *base = strrchr(program, '/');
    const char *v = getenv("AMPSHIM_REPORT");
    char cwd[PATH_MAX], pattern[2 * PATH_MAX + 64];
    size_t used = 0;

    if (v && *v)
        return 0;
    if (!getcwd(cwd, sizeof cwd) ||
        amp_run_put_literal(pattern, sizeof pattern, &used, cwd) != 0 ||
        amp_run_put_literal(pattern, sizeof pattern, &used,
                            strcmp(cwd, "/") == 0 ? "ampshim-"
                                                  : "/ampshim-") != 0 ||
        amp_run_put_literal(pattern, sizeof pattern, &used,
                            base ? base + 1 : program) != 0 ||
        used + sizeof "-%p.json" > sizeof pattern) {
        fprintf(stderr, "ampshim run: the working directory's path is too "
                "long for the report's; name one with --report\n");
        return -1;
    }
    memcpy(pattern + used, "-%p.json", sizeof "-%p.json");
    amp_run_report_default = 1;
    return setenv("AMPSHIM_REPORT", pattern, 1);
}

/* Names the report the program wrote, when it is where it should be:
 * AMPSHIM_REPORT (from --report, or amp_run_default_report) expanded for
 * the child. When there is none, the shim saw no call of the program's
 * process (it writes a report whenever it did, or warns that it could
 * not): says so, and why that may be. */
static void
amp_run_tell_report(pid_t pid, int status)
{
    const char *report = getenv("AMPSHIM_REPORT");
    char path[PATH_MAX + 64], cwd[PATH_MAX];
    const char *shown = path;
    struct stat st;

    if (!report || !*report || strcasecmp(report, "off") == 0 ||
        amp_path_expand(report, (long)pid, path, sizeof path) != AMP_OK)
        return;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        amp_run_tell_nothing(status);
        return;
    }
    /* The default place, the working directory: the name alone. */
    if (amp_run_report_default && getcwd(cwd, sizeof cwd) &&
        strncmp(path, cwd, strlen(cwd)) == 0 &&
        path[strlen(cwd)] == '/' && !strchr(path + strlen(cwd) + 1, '/'))
        shown = path + strlen(cwd) + 1;
    fprintf(stderr, "ampshim: report: %s (ampshim report %s)\n", shown,
            shown);
}

/* SIGTERM sent to the tool alone (a scheduler's, `kill PID`) is the
 * program's: the tool passes it on and waits for the program, which
 * handles it as it would have (its own dispositions decide), and leaves
 * no process behind. Before the program's pid is known, the signal waits
 * in amp_run_pending. (Ctrl-C reaches the program with the terminal's
 * process group; the tool ignores it and waits.) */
#define AMP_RUN_FORWARDED 1
static const int amp_run_forwarded[AMP_RUN_FORWARDED] = {SIGTERM};
static volatile sig_atomic_t amp_run_child_pid;
static volatile sig_atomic_t amp_run_pending;
static volatile sig_atomic_t amp_run_received; /* during this launch */

static void
amp_run_forward(int sig)
{
    int saved = errno;

    amp_run_received = sig;
    if (amp_run_child_pid > 0)
        kill((pid_t)amp_run_child_pid, sig);
    else
        amp_run_pending = sig;
    errno = saved;
}

/* Installs the forwarding handlers, the old dispositions into old. */
static void
amp_run_forward_start(struct sigaction *old)
{
    struct sigaction sa;
    int i;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = amp_run_forward;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    amp_run_child_pid = 0;
    amp_run_pending = 0;
    amp_run_received = 0;
    for (i = 0; i < AMP_RUN_FORWARDED; i++)
        sigaction(amp_run_forwarded[i], &sa, &old[i]);
}

static void
amp_run_forward_stop(const struct sigaction *old)
{
    int i;

    for (i = 0; i < AMP_RUN_FORWARDED; i++)
        sigaction(amp_run_forwarded[i], &old[i], NULL);
    amp_run_child_pid = 0;
}

/* The child: the program, or its exec's errno written to `failed` (a
 * close-on-exec pipe that a successful exec closes unwritten). */
static void
amp_run_child(char **argv, int failed, void (*old_int)(int),
              void (*old_quit)(int), const struct sigaction *old_term)
{
    int saved;

    signal(SIGINT, old_int);
    signal(SIGQUIT, old_quit);
    amp_run_forward_stop(old_term);
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
amp_tool_launch_signal(void)
{
    return amp_run_received;
}

int
amp_tool_launch(const struct amp_run_options *o, const char *library,
                char **argv)
{
    int status = 0, exec_errno, failed[2];
    void (*old_int)(int), (*old_quit)(int);
    struct sigaction old_term[AMP_RUN_FORWARDED];
    pid_t pid;

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
    amp_run_forward_start(old_term);
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        perror("ampshim: fork");
        close(failed[0]);
        close(failed[1]);
        signal(SIGINT, old_int);
        signal(SIGQUIT, old_quit);
        amp_run_forward_stop(old_term);
        return AMP_RUN_FAILED;
    }
    if (pid == 0) {
        close(failed[0]);
        amp_run_child(argv, failed[1], old_int, old_quit, old_term);
    }
    amp_run_child_pid = (sig_atomic_t)pid;
    if (amp_run_pending)
        kill(pid, amp_run_pending);
    close(failed[1]);
    exec_errno = amp_run_exec_errno(failed[0]);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("ampshim: waitpid");
            amp_run_forward_stop(old_term);
            return AMP_RUN_FAILED;
        }
    }
    signal(SIGINT, old_int);
    signal(SIGQUIT, old_quit);
    amp_run_forward_stop(old_term);
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
        amp_run_tell_report(pid, status);
    return amp_run_status(status);
}

static const char *
amp_run_getenv(const char *name)
{
    return getenv(name);
}

/* The policy the shim would read (none under a mode, but --policy is
 * checked all the same) parses; 0, or -1 after its FILE:LINE:COL
 * message. */
static int
amp_run_check_policy(const struct amp_run_options *o, const char *program)
{
    static struct amp_policy p;
    struct amp_policy_found found;
    struct amp_program prog;
    const char *mode = getenv("AMPSHIM_MODE");

    if (mode && *mode) {
        if (o->policy && amp_policy_load(o->policy, &p, &found.error) !=
                             AMP_OK) {
            fprintf(stderr, "ampshim run: %s\n", found.error.text);
            return -1;
        }
        return 0;
    }
    amp_program_of(program, &prog);
    amp_policy_find(amp_run_getenv, &prog, &p, &found);
    if (!found.broken)
        return 0;
    fprintf(stderr, "ampshim run: %s\n", found.error.text);
    if (found.accept == AMP_ACCEPT_LINE)
        fprintf(stderr, "ampshim run: %s:%d: this match line accepts %s, so "
                "the file with an error applies to it; fix it, or name a "
                "policy with --policy\n", found.path, found.match_line,
                prog.name);
    else if (found.accept != AMP_ACCEPT_NOT_CONSULTED)
        fprintf(stderr, "ampshim run: %s: %s, so the file with an error "
                "applies to every program; fix it, or name a policy with "
                "--policy\n", found.path,
                found.accept == AMP_ACCEPT_NO_MATCH_LINE
                    ? "it has no match line"
                    : "its match lines cannot be read");
    return -1;
}

/* The report, trace and log file can be created where they are named
 * (by an option of o or the environment); with force, a report or trace
 * file there is removed. 0 or -1. */
static int
amp_run_check_outputs(const struct amp_run_options *o, int force)
{
    static const char *const names[] = {"AMPSHIM_REPORT", "AMPSHIM_TRACE",
                                        "AMPSHIM_LOG_FILE"};
    const char *const options[] = {o->report ? "--report" : NULL,
                                   o->trace ? "--trace" : NULL, NULL};
    enum amp_output_kind kind = force ? AMP_OUTPUT_REPLACE : AMP_OUTPUT_NEW;
    char label[PATH_MAX + 64];
    int i;

    for (i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);

        if (i == 0 && (!v || !*v)) {
            /* ampshim-PROGRAM-PID.json in the working directory */
            if (!getcwd(label, sizeof label))
                snprintf(label, sizeof label, ".");
            if (amp_tool_check_output("ampshim run", "the report's default "
                                      "place (--report FILE or off)", label,
                                      AMP_OUTPUT_DIRECTORY) != 0)
                return -1;
            continue;
        }
        if (!v || !*v || (i == 0 && strcasecmp(v, "off") == 0))
            continue;
        if (options[i])
            snprintf(label, sizeof label, "%s %s", options[i], v);
        else
            snprintf(label, sizeof label, "%s=%s", names[i], v);
        if (amp_tool_check_output("ampshim run", label, v,
                                  i == 2 ? AMP_OUTPUT_APPEND : kind) != 0)
            return -1;
    }
    for (i = 0; force && i < 2; i++) {
        const char *v = getenv(names[i]);

        if (v && *v && !(i == 0 && strcasecmp(v, "off") == 0) &&
            amp_tool_remove_output("ampshim run", v) != 0)
            return -1;
    }
    return 0;
}

/* Everything that can be checked before the program starts; 0, or -1
 * after a message (nothing ran). library and program: where they are. */
static int
amp_run_check(const struct amp_run_options *o, int force,
              const char *program, char *library, size_t cap)
{
    char found[PATH_MAX], modes[400];
    enum amp_mode mode, candidate;
    enum amp_norm norm;
    double tol;

    if (o->mode && amp_config_mode(o->mode, &mode, &candidate) != AMP_OK) {
        const char *near = amp_config_mode_near(o->mode);

        amp_config_mode_names(modes, sizeof modes);
        fprintf(stderr, "ampshim run: --mode %s: not a mode%s%s%s; the "
                "modes: %s\n", o->mode, near ? "; did you mean '" : "",
                near ? near : "", near ? "'?" : "", modes);
        return -1;
    }
    if (o->tolerance &&
        amp_tolerance_parse(o->tolerance, &tol, &norm) != AMP_OK) {
        fprintf(stderr, "ampshim run: --tolerance %s: not a tolerance; "
                "expected a non-negative number with an optional :NORM, "
                "NORM " AMP_NORM_WORDS " (1e-6:fro)\n", o->tolerance);
        return -1;
    }
    if (amp_run_settings(o) != 0) {
        perror("ampshim run: environment");
        return -1;
    }
    if (amp_tool_check_settings("ampshim run") != 0 ||
        amp_tool_library(library, cap) != 0 ||
        amp_tool_find_program(program, found, sizeof found) != 0 ||
        amp_run_check_policy(o, found) != 0)
        return -1;
    amp_tool_warn_static("ampshim run", found);
    if (amp_run_check_outputs(o, force) != 0)
        return -1;
    return amp_run_default_report(program);
}

int
amp_tool_run(int argc, char **argv)
{
    struct amp_run_options o;
    char library[PATH_MAX];
    int first = 0, force = 0;
    int rc = amp_run_parse(argc, argv, &o, &force, &first);

    if (rc != 0)
        return rc == 1 ? 0 : AMP_RUN_FAILED;
    if (amp_run_check(&o, force, argv[first], library, sizeof library) != 0)
        return AMP_RUN_FAILED;
    o.tell_report = !o.quiet;
    return amp_tool_launch(&o, library, argv + first);
}
