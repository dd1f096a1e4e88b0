/* The `ampshim` tool's subcommands beyond `policy check` (run, report,
 * calibrate, policy which), their option parsing and the checks made
 * before a program runs. */
#ifndef AMP_TOOL_H
#define AMP_TOOL_H

#include <getopt.h>
#include <stddef.h>

/* The tool's exit status when nothing ran (as env(1)'s and timeout(1)'s
 * own failures): a usage error of `run`, a check before the program
 * failed, no library, a program that could not be started. Any other
 * status of `run` is the program's. */
#define AMP_RUN_FAILED 125

/* The status of a usage error in the commands whose status is not a
 * program's (report, calibrate, policy check, the tool itself). */
#define AMP_TOOL_USAGE 2

/* ---- Options ------------------------------------------------------------- */

/* getopt_long over one subcommand's arguments (argv[0]: its name), with
 * the tool's messages. optstring starts with '+' (stop at the first
 * argument that is not an option: what follows is a program's) or '-'
 * (arguments in order, returned as 1 with optarg), then ':'. */
struct amp_opt {
    const char *command;          /* "ampshim run": names it in messages */
    const char *optstring;
    const struct option *longopts;
    int argc;
    char **argv;
    int started;
};

/* The next option, as getopt_long returns it (optarg, optind); -1 at the
 * end (optind: the first argument left); '?' after a message on stderr:
 * "COMMAND: unknown option '--foo'" (or a missing, empty or unwanted
 * value, an ambiguous abbreviation) and a pointer to --help. */
int amp_opt_next(struct amp_opt *o);

/* Prints "COMMAND: MESSAGE" and the pointer to COMMAND --help on stderr. */
void amp_opt_usage(const char *command, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- Checks before a program runs ---------------------------------------- */

/* What amp_tool_check_output accepts at the path. */
enum amp_output_kind {
    AMP_OUTPUT_NEW = 0,           /* created: no file may be there */
    AMP_OUTPUT_REPLACE,           /* --force: a file there is replaced */
    AMP_OUTPUT_APPEND,            /* a log: a file there is appended to */
    AMP_OUTPUT_DIRECTORY,         /* only the directory: pattern is one
                                     ("." for the working directory) */
};

/* Checks that a file can be written at pattern (its escapes expanded for
 * this process: base/path.h): its directory exists and is writable, no
 * directory is at the path, and for AMP_OUTPUT_NEW nothing is there
 * (unknowable for a pattern with %p or %i, whose process is not yet
 * there). label names the setting in the message ("--report FILE",
 * "AMPSHIM_TRACE=FILE"). 0, or -1 after "COMMAND: LABEL: what is wrong". */
int amp_tool_check_output(const char *command, const char *label,
                          const char *pattern, enum amp_output_kind kind);

/* As amp_tool_check_output, for a path taken as written (no escapes). */
int amp_tool_check_file(const char *command, const char *label,
                        const char *path, enum amp_output_kind kind);

/* Removes the file at pattern, expanded for this process, when one is
 * there (--force, after every check passed); 0, or -1 after a message. */
int amp_tool_remove_output(const char *command, const char *pattern);

/* Reads the AMPSHIM_* settings of this process's environment as the shim
 * will; 0, or -1 after "COMMAND: PROBLEM" for each bad value. */
int amp_tool_check_settings(const char *command);

/* Finds program as execvp does (in PATH when it has no '/'), its path
 * into out; 0, or -1 after "ampshim: cannot run PROGRAM: REASON; nothing
 * ran". */
int amp_tool_find_program(const char *program, char *out, size_t cap);

/* As amp_tool_find_program, without a message: -1 with errno set. */
int amp_tool_locate_program(const char *program, char *out, size_t cap);

/* Warns on stderr, once per library, when the program file defines
 * cuBLAS, cuBLASLt or cuDNN functions itself (a static copy, whose calls
 * the shim cannot replace); returns how many libraries it named. A file
 * it cannot read, or a stripped one, gives no warning. */
int amp_tool_warn_static(const char *command, const char *program);

/* Finds libampshim.so: AMPSHIM_LIBRARY, else next to the tool, in
 * ../hooks from it (a build tree), else the install's library directory;
 * its path into out. 0, or -1 after a message naming the last place
 * looked. */
int amp_tool_library(char *out, size_t cap);

/* ---- Running a program --------------------------------------------------- */

/* The shim's settings for one run; NULL: not set. */
struct amp_run_options {
    const char *policy, *mode, *report, *trace;
    const char *tolerance;     /* AMPSHIM_TOLERANCE: X[:NORM] */
    int quiet;                 /* AMPSHIM_QUIET=1 */
    int tell_report;           /* name the report on stderr afterwards */
};

/* Runs argv[0] (searched in PATH) with library preloaded and the options
 * as AMPSHIM_* variables of this process and the child; returns the
 * program's status (128 + N for signal N), or AMP_RUN_FAILED when fork
 * fails or the program cannot be executed (the message names the
 * reason: not found, not executable, ...). */
int amp_tool_launch(const struct amp_run_options *o, const char *library,
                    char **argv);

/* The signal the tool received (and passed on to the program) during the
 * last amp_tool_launch; 0 when none. */
int amp_tool_launch_signal(void);

/* `ampshim run [OPTIONS] [--] PROGRAM ARGS...`: the program's exit status,
 * or 125 when nothing ran. */
int amp_tool_run(int argc, char **argv);
extern const char amp_tool_run_help[];

/* `ampshim report [--html OUT] [--csv OUT] FILE`: 0, 1 when FILE is not a
 * report or an OUT cannot be written, 2 on a usage error. */
int amp_tool_report(int argc, char **argv);
extern const char amp_tool_report_help[];

/* `ampshim report FILE... | DIR`: one summary of a job's reports (the
 * processes, totals, each site's spread across them, decisions that
 * differ, the slowest) as a table, a page into html and CSV into csv
 * ("-": standard output, instead of the table) unless NULL; 0, or 1 when
 * no report could be read or an output not written. */
int amp_tool_report_job(char **args, size_t nargs, const char *html,
                        const char *csv);

/* `ampshim calibrate [OPTIONS] -- PROGRAM ARGS...`: 0, 1 when a run or
 * the policy file fails, 2 on a usage error, 125 when a check before the
 * runs fails. */
int amp_tool_calibrate(int argc, char **argv);
extern const char amp_tool_calibrate_help[];

/* `ampshim policy which [PROGRAM]`: 0 when a usable policy applies to
 * PROGRAM, 1 when the file that applies has an error, 2 on a usage error
 * or a PROGRAM not found. */
int amp_tool_which(int argc, char **argv);
extern const char amp_tool_which_help[];

/* A whole file, NUL-terminated (*len without the NUL), "-" standard
 * input; NULL with errno set when it cannot be read. */
char *amp_tool_read_file(const char *path, size_t *len);

#endif
