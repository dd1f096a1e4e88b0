/* The subcommands' options: getopt_long, with messages that name the
 * option and point to --help. */
#include "tool/tool.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
amp_opt_usage(const char *command, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", command);
}

/* The option as written in arg ("--name" without "=value"), or "-c". */
static void
amp_opt_name(const char *arg, int c, char *out, size_t cap)
{
    if (arg && strncmp(arg, "--", 2) == 0)
        snprintf(out, cap, "%.*s", (int)strcspn(arg, "="), arg);
    else
        snprintf(out, cap, "-%c", c);
}

/* Says why getopt_long refused the long option `name` ("--...").  */
static void
amp_opt_long_error(const struct amp_opt *o, const char *name, int has_value)
{
    const struct option *l;
    char matches[256] = "";
    size_t len = strlen(name + 2);
    int n = 0;

    for (l = o->longopts; l && l->name; l++) {
        if (strncmp(l->name, name + 2, len) != 0)
            continue;
        if (l->name[len] == '\0' && has_value && l->has_arg == no_argument) {
            amp_opt_usage(o->command, "option '--%s' takes no value",
                          l->name);
            return;
        }
        n++;
        snprintf(matches + strlen(matches), sizeof matches - strlen(matches),
                 "%s--%s", n > 1 ? ", " : "", l->name);
    }
    if (n > 1)
        amp_opt_usage(o->command, "option '%s' is ambiguous (%s)", name,
                      matches);
    else
        amp_opt_usage(o->command, "unknown option '%s'", name);
}

int
amp_opt_next(struct amp_opt *o)
{
    const char *current;
    char name[128];
    int c, at;

    if (!o->started) {
        optind = 0;              /* glibc: start afresh at argv[1] */
        o->started = 1;
    }
    opterr = 0;
    /* The argument being read: getopt_long leaves optind on it until it
     * is done (no permutation with '+' or '-'). */
    at = optind ? optind : 1;
    current = at < o->argc ? o->argv[at] : NULL;
    c = getopt_long(o->argc, o->argv, o->optstring, o->longopts, NULL);
    switch (c) {
    case '?':
        if (current && strncmp(current, "--", 2) == 0) {
            amp_opt_name(current, 0, name, sizeof name);
            amp_opt_long_error(o, name, strchr(current, '=') != NULL);
        } else {
            amp_opt_usage(o->command, "unknown option '-%c'", optopt);
        }
        return '?';
    case ':':
        amp_opt_name(current, optopt, name, sizeof name);
        amp_opt_usage(o->command, "option '%s' needs a value", name);
        return '?';
    case -1:
    case 1:
        return c;
    }
    /* getopt_long takes the next argument as the value, even "--": a
     * value left out. */
    if (optarg && optarg == o->argv[optind - 1] && strcmp(optarg, "--") == 0) {
        amp_opt_name(current, c, name, sizeof name);
        amp_opt_usage(o->command, "option '%s' needs a value", name);
        return '?';
    }
    if (optarg && !*optarg) {
        amp_opt_name(current, c, name, sizeof name);
        amp_opt_usage(o->command, "option '%s' needs a value, not an empty "
                      "one", name);
        return '?';
    }
    return c;
}
