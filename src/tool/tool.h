/* The `ampshim` tool's subcommands beyond `policy check`: run, report and
 * calibrate. */
#ifndef AMP_TOOL_H
#define AMP_TOOL_H

#include <stddef.h>

/* The tool's exit status when nothing ran (as env(1)'s own failures):
 * no library, a usage error, a program that could not be started. Any
 * other status is the program's. */
#define AMP_RUN_FAILED 125

/* The shim's settings for one run; NULL: not set. */
struct amp_run_options {
    const char *policy, *mode, *report, *trace;
    int tell_report;           /* name the report on stderr afterwards */
};

/* Runs argv[0] (searched in PATH) with libampshim.so preloaded and the
 * options as AMPSHIM_* variables of this process and the child; returns
 * the program's status (128 + N for signal N), or AMP_RUN_FAILED when
 * the library is not found, fork fails or the program cannot be executed
 * (the message names the reason: not found, not executable, ...). */
int amp_tool_launch(const struct amp_run_options *o, char **argv);

/* `ampshim run [OPTIONS] [--] PROGRAM ARGS...`: the program's exit status,
 * or 125 when nothing ran. */
int amp_tool_run(int argc, char **argv);
extern const char amp_tool_run_help[];

/* `ampshim report FILE [--html OUT] [--csv OUT]`. */
int amp_tool_report(int argc, char **argv);
extern const char amp_tool_report_help[];

/* `ampshim calibrate [OPTIONS] -- PROGRAM ARGS...`: 0, 1 when a run or
 * the policy file fails, 2 on a usage error. */
int amp_tool_calibrate(int argc, char **argv);
extern const char amp_tool_calibrate_help[];

/* A whole file, NUL-terminated (*len without the NUL); NULL with errno
 * set when it cannot be read. */
char *amp_tool_read_file(const char *path, size_t *len);

#endif
