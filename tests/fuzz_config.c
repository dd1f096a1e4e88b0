/* libFuzzer target: the environment parsers. The input is split at NUL
 * bytes into the values of every variable amp_config_load reads, in
 * order (byte counts with K/M/G, mode and level names and numbers,
 * booleans, paths); the rest goes to the path escapes' expansion (%p, %i,
 * %h, %%). Every result must be in range and every problem a
 * NUL-terminated line within its bounds; ASan and UBSan watch the reads. */
#include "base/config.h"
#include "base/path.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_names[] = {
    "AMPSHIM_DISABLE", "AMPSHIM_MODE", "AMPSHIM_LOG_LEVEL", "AMPSHIM_QUIET",
    "AMPSHIM_LOG_FILE", "AMPSHIM_SUMMARY", "AMPSHIM_SCRATCH_MAX",
    "AMPSHIM_CALL_LOG", "AMPSHIM_REPORT", "AMPSHIM_TRACE",
    "NVIDIA_TF32_OVERRIDE",
};
#define FUZZ_NAMES ((int)(sizeof fuzz_names / sizeof *fuzz_names))

static const char *fuzz_values[FUZZ_NAMES];

static const char *
fuzz_getenv(const char *name)
{
    for (int i = 0; i < FUZZ_NAMES; i++)
        if (strcmp(name, fuzz_names[i]) == 0)
            return fuzz_values[i];
    return NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct amp_config cfg;
    char expanded[64];
    /* A NUL-terminated copy: each value ends at its own NUL. */
    char *text = malloc(size + 1);
    size_t at = 0;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    for (int i = 0; i < FUZZ_NAMES; i++) {
        fuzz_values[i] = at <= size ? text + at : NULL;
        if (at <= size)
            at += strlen(text + at) + 1;
    }
    amp_config_load(&cfg, fuzz_getenv);
    if ((unsigned)cfg.mode >= AMP_MODE_COUNT ||
        (unsigned)cfg.shadow_candidate >= AMP_MODE_COUNT ||
        cfg.log_level > AMP_LOG_DEBUG || cfg.quiet < 0 || cfg.quiet > 1 ||
        cfg.disabled < 0 ||
        cfg.disabled > 1 || cfg.summary < 0 || cfg.summary > 1 ||
        cfg.nproblems < 0 || cfg.nproblems > AMP_CONFIG_MAX_PROBLEMS ||
        strnlen(cfg.log_file, sizeof cfg.log_file) == sizeof cfg.log_file)
        abort();
    for (int i = 0; i < cfg.nproblems; i++)
        if (strnlen(cfg.problems[i], AMP_CONFIG_PROBLEM_LEN) ==
                AMP_CONFIG_PROBLEM_LEN ||
            strncmp(cfg.problems[i], "AMPSHIM_", 8) != 0)
            abort();
    /* A path's escapes: fits or says it does not (and leaves ""), never
     * overflows. */
    if (amp_path_expand(text, 12345, expanded, sizeof expanded) == AMP_OK
            ? strnlen(expanded, sizeof expanded) == sizeof expanded
            : expanded[0] != '\0')
        abort();
    free(text);
    return 0;
}
