/* The shim's log: stderr or AMPSHIM_LOG_FILE (nowhere under AMPSHIM_QUIET),
 * every line "ampshim[pid]: ". */
#ifndef AMP_LOG_H
#define AMP_LOG_H

#include "base/config.h"

/* Opens the destination: path with its escapes expanded (base/path.h:
 * %p, %i, %h, %%), or stderr for NULL or "". A file that cannot be opened
 * gives one warning on stderr and logging goes to stderr. quiet
 * (AMPSHIM_QUIET): stderr is never written; lines go to the file when
 * there is one, else nowhere. */
void amp_log_open(enum amp_log_level level, const char *path, int quiet);

/* Closes a log file (for tests and a forked child). */
void amp_log_close(void);

int amp_log_enabled(enum amp_log_level level);

/* Writes one line with a level tag; use amp_log(), which checks the level
 * before the arguments are evaluated. */
void amp_log_write(enum amp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Writes one untagged line ("ampshim[pid]: " + text), whatever the level:
 * the exit summary. */
void amp_log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define amp_log(level, ...)                                                  \
    do {                                                                     \
        if (amp_log_enabled(level))                                          \
            amp_log_write(level, __VA_ARGS__);                               \
    } while (0)

#endif
