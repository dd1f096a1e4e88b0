/* The paths a user names for the shim's files (AMPSHIM_REPORT,
 * AMPSHIM_TRACE, AMPSHIM_LOG_FILE, the tool's --report and --trace), with
 * NVIDIA's escapes: %p and %i the process id, %h the host name, %% a
 * percent sign; and %r, the rank of the process in its job. */
#ifndef AMP_PATH_H
#define AMP_PATH_H

#include "base/status.h"

#include <stddef.h>

/* Writes pattern into out (cap bytes) with %p and %i replaced by pid, %h
 * by the host name ("unknown" when it cannot be read), %r by the process's
 * rank in its job (base/job.h: the launcher's variables; 0 outside a job)
 * and %% by '%'; any other '%' is kept as written. Fails with AMP_ERR_TOO_BIG when the
 * result does not fit (out is then ""), AMP_ERR_INVALID when cap is 0. */
enum amp_status amp_path_expand(const char *pattern, long pid, char *out,
                                size_t cap);

/* 1 when pattern has %p or %i: the path depends on the process. */
int amp_path_has_pid(const char *pattern);

/* The directory of the reports a process writes by default, as the XDG
 * Base Directory specification places state: $XDG_STATE_HOME/ampshim when
 * that is an absolute path, else $HOME/.local/state/ampshim (either
 * variable's value given, NULL when unset). AMP_ERR_INVALID when neither
 * gives an absolute path (out is then ""), AMP_ERR_TOO_BIG when it does
 * not fit. */
enum amp_status amp_state_dir(const char *xdg_state_home, const char *home,
                              char *out, size_t cap);

/* Makes dir and its missing parents, new ones with `mode`; 0, or -1 with
 * errno set. */
int amp_make_dirs(const char *dir, unsigned mode);

#endif
