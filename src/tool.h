/* The `ampshim` tool's subcommands beyond `policy check`: run and report. */
#ifndef AMP_TOOL_H
#define AMP_TOOL_H

/* `ampshim run [OPTIONS] [--] PROGRAM ARGS...`: the program's exit status,
 * or 125 when the tool fails, 126/127 when the program cannot be run. */
int amp_tool_run(int argc, char **argv);
extern const char amp_tool_run_help[];

/* `ampshim report FILE [--html OUT] [--csv OUT]`. */
int amp_tool_report(int argc, char **argv);
extern const char amp_tool_report_help[];

#endif
