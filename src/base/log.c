/* The shim's log: one write() per line, so lines from threads never mix;
 * stderr, AMPSHIM_LOG_FILE, or with AMPSHIM_QUIET and no file nowhere. */
#include "base/log.h"

#include "base/path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Room for a site label (decide/symbolize.h, AMP_LABEL_LEN) and more. */
#define AMP_LOG_LINE_MAX 2048

static enum amp_log_level amp_log_level_now = AMP_LOG_WARN;
/* Where lines go: stderr, the log file, or -1 (quiet, no file): nowhere. */
static int amp_log_fd = STDERR_FILENO;
/* AMPSHIM_QUIET: stderr is never written. */
static int amp_log_quiet;

static const char *const amp_log_tags[] = {
    [AMP_LOG_OFF] = "",
    [AMP_LOG_ERROR] = "error: ",
    [AMP_LOG_WARN] = "warning: ",
    [AMP_LOG_INFO] = "info: ",
    [AMP_LOG_DEBUG] = "debug: ",
};

void
amp_log_open(enum amp_log_level level, const char *path, int quiet)
{
    char expanded[AMP_CONFIG_PATH_LEN + 32];
    int fd;

    amp_log_level_now = level;
    amp_log_quiet = quiet;
    amp_log_close();
    if (!path || !*path)
        return;
    if (amp_path_expand(path, (long)getpid(), expanded, sizeof expanded) !=
        AMP_OK) {
        amp_log_write(AMP_LOG_WARN, "AMPSHIM_LOG_FILE is too long once "
                      "expanded; logging to stderr");
        return;
    }
    fd = open(expanded, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        amp_log_write(AMP_LOG_WARN, "cannot open AMPSHIM_LOG_FILE %s: %s; "
                      "logging to stderr", expanded, strerror(errno));
        return;
    }
    amp_log_fd = fd;
}

void
amp_log_close(void)
{
    if (amp_log_fd != STDERR_FILENO && amp_log_fd >= 0)
        close(amp_log_fd);
    amp_log_fd = amp_log_quiet ? -1 : STDERR_FILENO;
}

int
amp_log_enabled(enum amp_log_level level)
{
    return level != AMP_LOG_OFF && level <= amp_log_level_now;
}

static void amp_log_vwrite(const char *tag, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void
amp_log_vwrite(const char *tag, const char *fmt, va_list ap)
{
    char line[AMP_LOG_LINE_MAX];
    int head;
    int body;
    size_t len;
    int saved_errno = errno;

    head = snprintf(line, sizeof line, "ampshim[%ld]: %s", (long)getpid(),
                    tag);
    if (head < 0)
        goto out;
    body = vsnprintf(line + head, sizeof line - (size_t)head - 1, fmt, ap);
    if (body < 0)
        goto out;
    len = (size_t)head + (size_t)body;
    if (len > sizeof line - 2)
        len = sizeof line - 2; /* truncated: keep the newline */
    line[len++] = '\n';
    if (amp_log_fd >= 0 && write(amp_log_fd, line, len) < 0) {
        /* Nowhere left to report it; the host program goes on. */
    }
out:
    errno = saved_errno;
}

void
amp_log_write(enum amp_log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    amp_log_vwrite(amp_log_tags[level], fmt, ap);
    va_end(ap);
}

void
amp_log_line(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    amp_log_vwrite("", fmt, ap);
    va_end(ap);
}
