/* cuBLASLt's logger, as cublasLt.h (CUDA 13) declares it: a level (0 off,
 * 1 errors, 2 performance trace, 3 performance hints, 4 heuristics
 * trace, 5 API trace) or a mask of the same kinds (1, 2, 4, 8, 16), and
 * where messages go: a callback, a file the program opened, a file the
 * logger opens, or standard output. The emulator writes the two kinds it
 * has something to say about: errors (a call that returns a failure) and
 * the API trace (every cublasLtMatmul and heuristics query). Its lines
 * are its own; only the kinds and where they go follow cuBLASLt.
 *
 * The environment sets the logger first, as in NVIDIA's other math
 * libraries (cuSPARSELt's and cuDSS's "Logging" pages: <LIB>_LOG_LEVEL,
 * <LIB>_LOG_MASK, <LIB>_LOG_FILE with %i for the process id, standard
 * output without one): CUBLASLT_LOG_LEVEL, CUBLASLT_LOG_MASK and
 * CUBLASLT_LOG_FILE; the calls below take precedence. */
#include <cublasLt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cublas_status.h"
#include "cublaslt_emu.h"

#define LOG_ERROR 1
#define LOG_API_TRACE 16

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_mask;
static int log_disabled;
static cublasLtLoggerCallback_t log_callback;
static FILE *log_file;          /* the program's or the logger's own */
static FILE *log_opened;        /* the logger's own, closed on replacement */

/* A level enables its kind and those below it. */
static int
mask_of_level(int level)
{
    return (1 << level) - 1;
}

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* CUBLASLT_LOG_FILE with each %i the process id. */
static FILE *
open_env_file(const char *pattern)
{
    char path[4096];
    size_t n = 0;

    for (const char *c = pattern; *c != '\0' && n + 24 < sizeof(path); c++) {
        if (c[0] == '%' && c[1] == 'i') {
            n += (size_t)snprintf(path + n, sizeof(path) - n, "%ld",
                                  (long)getpid());
            c++;
        } else {
            path[n++] = *c;
        }
    }
    path[n] = '\0';
    return fopen(path, "a");
}

static void
read_env(void)
{
    const char *level = getenv("CUBLASLT_LOG_LEVEL");
    const char *mask = getenv("CUBLASLT_LOG_MASK");
    const char *file = getenv("CUBLASLT_LOG_FILE");

    if (level != NULL && *level >= '0' && *level <= '5' && level[1] == '\0')
        log_mask = mask_of_level(*level - '0');
    else if (mask != NULL && *mask != '\0')
        log_mask = (int)strtol(mask, NULL, 10);
    if (file != NULL && *file != '\0' && (log_opened = open_env_file(file)))
        log_file = log_opened;
}

static void
lock_logger(void)
{
    pthread_once(&env_once, read_env);
    pthread_mutex_lock(&log_lock);
}

cublasStatus_t
cublasLtLoggerSetLevel(int level)
{
    if (level < 0 || level > 5)
        return CUBLAS_STATUS_INVALID_VALUE;
    lock_logger();
    log_mask = mask_of_level(level);
    pthread_mutex_unlock(&log_lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtLoggerSetMask(int mask)
{
    lock_logger();
    log_mask = mask;
    pthread_mutex_unlock(&log_lock);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtLoggerSetCallback(cublasLtLoggerCallback_t callback)
{
    lock_logger();
    log_callback = callback;
    pthread_mutex_unlock(&log_lock);
    return CUBLAS_STATUS_SUCCESS;
}

static void
replace_file(FILE *file, FILE *opened)
{
    if (log_opened != NULL)
        fclose(log_opened);
    log_file = file;
    log_opened = opened;
}

cublasStatus_t
cublasLtLoggerSetFile(FILE *file)
{
    lock_logger();
    replace_file(file, NULL);
    pthread_mutex_unlock(&log_lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* "if the log file does not exist, it will be created"; one that cannot
 * be is a bad value. */
cublasStatus_t
cublasLtLoggerOpenFile(const char *logFile)
{
    FILE *f;

    if (logFile == NULL || (f = fopen(logFile, "a")) == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    lock_logger();
    replace_file(f, f);
    pthread_mutex_unlock(&log_lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* "Disable logging for the entire session": no later setting turns it
 * back on. (cublasLt.h declares it with an empty parameter list, which
 * in C is no prototype.) */
cublasStatus_t cublasLtLoggerForceDisable(void);

cublasStatus_t
cublasLtLoggerForceDisable(void)
{
    lock_logger();
    log_disabled = 1;
    pthread_mutex_unlock(&log_lock);
    return CUBLAS_STATUS_SUCCESS;
}

/* One message of a kind (LOG_ERROR, LOG_API_TRACE; its level is the
 * kind's bit position plus one) from a function, where the logger sends
 * it. */
static void
log_message(int kind, const char *function, const char *message)
{
    int level = kind == LOG_ERROR ? 1 : 5;

    lock_logger();
    if (!log_disabled && (log_mask & kind) != 0) {
        if (log_callback != NULL) {
            log_callback(level, function, message);
        } else {
            FILE *out = log_file != NULL ? log_file : stdout;

            fprintf(out, "[cublasLt][%s] %s: %s\n",
                    kind == LOG_ERROR ? "Error" : "Api", function, message);
            fflush(out);
        }
    }
    pthread_mutex_unlock(&log_lock);
}

int
emu_lt_log_on(void)
{
    int on;

    lock_logger();
    on = !log_disabled && (log_mask & (LOG_ERROR | LOG_API_TRACE)) != 0;
    pthread_mutex_unlock(&log_lock);
    return on;
}

void
emu_lt_log_call(const char *function, cublasStatus_t status, const char *fmt,
                ...)
{
    char args[512], message[640];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(message, sizeof(message), "%s -> %s", args,
             emu_blas_status_name(status));
    log_message(LOG_API_TRACE, function, message);
    if (status != CUBLAS_STATUS_SUCCESS)
        log_message(LOG_ERROR, function, message);
}
