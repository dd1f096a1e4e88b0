/* `ampshim policy which [PROGRAM]`: which policy file the shim would apply
 * to a program and why, from the shim's own search (amp_policy_find) and
 * the trail of files it passed over. */
#include "decide/policy.h"
#include "tool/tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char amp_tool_which_help[] =
    "usage: ampshim policy which [--] [PROGRAM]\n"
    "\n"
    "Says which policy the shim would apply to PROGRAM (a path, or a name\n"
    "looked up in PATH; its ELF build-id is read for 'match build-id'\n"
    "lines) and why: AMPSHIM_POLICY, else the first *.policy file, in name\n"
    "order, of the user's and the system's policy directories whose match\n"
    "lines accept the program, else the built-in default. It prints the\n"
    "files passed over and why (their match lines do not accept it; an\n"
    "error, but not for this program), the policy and its source, the\n"
    "match line that accepted it (FILE:LINE), and a broken file's error.\n"
    "Without PROGRAM: a program that no match line names.\n"
    "\n"
    "options:\n"
    "  -h, --help   this help\n"
    "\n"
    "exit status:\n"
    "  0 when a usable policy applies, 1 when the file that applies has an\n"
    "  error (the shim converts nothing: FP32), 2 on a usage error or a\n"
    "  PROGRAM that cannot be found.\n";

static const char *
amp_which_getenv(const char *name)
{
    return getenv(name);
}

static const char *
amp_which_source(enum amp_policy_source source)
{
    switch (source) {
    case AMP_SOURCE_ENV:
        return "AMPSHIM_POLICY";
    case AMP_SOURCE_USER:
        return "user";
    case AMP_SOURCE_SYSTEM:
        return "system";
    default:
        return "built-in";
    }
}

static void
amp_which_hex(const unsigned char *bytes, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++)
        printf("%02x", bytes[i]);
}

/* The match line at `line` of p as written: "match exe GLOB build-id HEX". */
static void
amp_which_match_text(const struct amp_policy *p, int line)
{
    int i;

    for (i = 0; i < p->nmatches; i++) {
        const struct amp_policy_match *m = &p->matches[i];

        if (m->line != line)
            continue;
        printf(" (match");
        if (m->exe)
            printf(" exe %s", p->strings + m->exe);
        if (m->build_id_len) {
            printf(" build-id ");
            amp_which_hex(m->build_id, m->build_id_len);
        }
        printf(")");
        return;
    }
}

static void
amp_which_skipped(const struct amp_policy_found *found, const char *name)
{
    int i, n = found->nskipped < AMP_POLICY_SKIPPED_MAX
                   ? found->nskipped
                   : AMP_POLICY_SKIPPED_MAX;

    for (i = 0; i < n; i++) {
        const struct amp_policy_skipped *s = &found->skipped[i];

        if (s->broken)
            printf("skipped: %s (%s): it has an error, but its match lines "
                   "do not accept %s: %s:%d:%d: %s\n", s->path,
                   amp_which_source(s->source), name, s->path,
                   s->error_line, s->error_col, s->error_message);
        else
            printf("skipped: %s (%s): its match lines do not accept %s\n",
                   s->path, amp_which_source(s->source), name);
    }
    if (found->nskipped > n)
        printf("skipped: %d more files\n", found->nskipped - n);
}

/* Prints what found says; 0 for a usable policy, 1 for a broken one. */
static int
amp_which_print(const struct amp_policy *p,
                const struct amp_policy_found *found, const char *name)
{
    const char *mode = getenv("AMPSHIM_MODE");

    amp_which_skipped(found, name);
    printf("policy:  %s\n", found->source == AMP_SOURCE_BUILTIN
                                ? "built-in default"
                                : found->path);
    printf("source:  %s\n", amp_which_source(found->source));
    switch (found->accept) {
    case AMP_ACCEPT_LINE:
        printf("match:   %s:%d", found->path, found->match_line);
        amp_which_match_text(p, found->match_line);
        printf(" accepts %s\n", name);
        break;
    case AMP_ACCEPT_NO_MATCH_LINE:
        printf("match:   %s: no match line, so it applies to every "
               "program\n", found->path);
        break;
    case AMP_ACCEPT_UNREADABLE:
        printf("match:   %s: its match lines cannot be read (%s), so it "
               "applies to every program\n", found->path,
               found->match_error.text);
        break;
    default:
        if (found->source == AMP_SOURCE_ENV)
            printf("match:   not consulted: AMPSHIM_POLICY names the "
                   "file\n");
        else
            printf("match:   none: no AMPSHIM_POLICY, and no file in the "
                   "policy directories applies to %s\n", name);
        break;
    }
    if (found->broken) {
        printf("error:   %s\n", found->error.text);
        printf("result:  the policy has an error: nothing is converted, "
               "every call of %s runs FP32\n", name);
    }
    if (mode && *mode)
        printf("note:    AMPSHIM_MODE=%s is set: the shim reads no policy "
               "and runs every call in that mode\n", mode);
    return found->broken ? 1 : 0;
}

int
amp_tool_which(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static struct amp_policy p;
    static struct amp_policy_found found;
    static struct amp_program prog;
    struct amp_opt opt = {"ampshim policy which", "-:h", longopts, argc,
                          argv, 0};
    const char *program = NULL, *name;
    char path[4096];
    int c, extra = 0;

    while ((c = amp_opt_next(&opt)) != -1) {
        if (c == 1) {
            extra += program != NULL;
            program = optarg;
        } else if (c == 'h') {
            printf("%s", amp_tool_which_help);
            return 0;
        } else {
            return AMP_TOOL_USAGE;
        }
    }
    for (; optind < argc; optind++) {
        extra += program != NULL;
        program = argv[optind];
    }
    if (extra) {
        amp_opt_usage("ampshim policy which", "one PROGRAM at most");
        return AMP_TOOL_USAGE;
    }
    memset(&prog, 0, sizeof prog);
    prog.name = prog.exe;
    if (program) {
        if (amp_tool_locate_program(program, path, sizeof path) != 0) {
            fprintf(stderr, "ampshim policy which: cannot find %s: %s\n",
                    program, strerror(errno));
            return AMP_TOOL_USAGE;
        }
        amp_program_of(path, &prog);
        name = prog.name;
        printf("program: %s (", prog.exe);
        if (prog.build_id_len) {
            printf("build-id ");
            amp_which_hex(prog.build_id, prog.build_id_len);
        } else {
            printf("no build-id");
        }
        printf(")\n");
    } else {
        name = "a program no match line names";
        printf("program: none named: %s\n", name);
    }
    amp_policy_find(amp_which_getenv, &prog, &p, &found);
    return amp_which_print(&p, &found, name);
}
