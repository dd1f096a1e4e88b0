/* Expands the escapes of a user's path: %p, %i, %h, %r and %%; the default
 * directory of the reports. */
#include "base/path.h"

#include "base/job.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef HOST_NAME_MAX
#define HOST_NAME_MAX 255
#endif

/* Appends text to out at *used; 0, or -1 when it does not fit. */
static int
amp_path_put(char *out, size_t cap, size_t *used, const char *text,
             size_t len)
{
    if (len >= cap - *used)
        return -1;
    memcpy(out + *used, text, len);
    *used += len;
    return 0;
}

/* The host name; "unknown" when the system gives none. */
static void
amp_path_host(char *host, size_t cap)
{
    if (gethostname(host, cap) != 0 || !host[0])
        snprintf(host, cap, "unknown");
    host[cap - 1] = '\0';
}

enum amp_status
amp_path_expand(const char *pattern, long pid, char *out, size_t cap)
{
    char pid_text[32], rank_text[32], host[HOST_NAME_MAX + 1] = "";
    const char *p, *text;
    size_t used = 0, len;

    if (cap == 0)
        return AMP_ERR_INVALID;
    snprintf(pid_text, sizeof pid_text, "%ld", pid);
    for (p = pattern; *p; p++) {
        text = p;
        len = 1;
        if (p[0] == '%' && (p[1] == 'p' || p[1] == 'i')) {
            text = pid_text;
            len = strlen(pid_text);
            p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            if (!host[0])
                amp_path_host(host, sizeof host);
            text = host;
            len = strlen(host);
            p++;
        } else if (p[0] == '%' && p[1] == 'r') {
            snprintf(rank_text, sizeof rank_text, "%ld",
                     amp_job_rank());
            text = rank_text;
            len = strlen(rank_text);
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            p++;
        }
        if (amp_path_put(out, cap, &used, text, len) != 0) {
            out[0] = '\0';
            return AMP_ERR_TOO_BIG;
        }
    }
    out[used] = '\0';
    return AMP_OK;
}

int
amp_path_has_pid(const char *pattern)
{
    const char *p;

    for (p = pattern; *p; p++) {
        if (p[0] != '%' || !p[1])
            continue;
        if (p[1] == 'p' || p[1] == 'i')
            return 1;
        p++; /* %% and the others: the next character is not an escape */
    }
    return 0;
}

enum amp_status
amp_state_dir(const char *xdg_state_home, const char *home, char *out,
              size_t cap)
{
    int n;

    if (cap == 0)
        return AMP_ERR_INVALID;
    out[0] = '\0';
    if (xdg_state_home && xdg_state_home[0] == '/')
        n = snprintf(out, cap, "%s/ampshim", xdg_state_home);
    else if (home && home[0] == '/')
        n = snprintf(out, cap, "%s/.local/state/ampshim", home);
    else
        return AMP_ERR_INVALID;
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return AMP_ERR_TOO_BIG;
    }
    return AMP_OK;
}

int
amp_make_dirs(const char *dir, unsigned mode)
{
    char path[4096];
    size_t i, len = strlen(dir);

    if (len == 0 || len >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, len + 1);
    for (i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        path[i] = '\0';
        if (mkdir(path, (mode_t)mode) != 0 && errno != EEXIST)
            return -1;
        path[i] = i < len ? '/' : '\0';
    }
    return 0;
}
