/* The `ampshim` command-line tool: one table of subcommands (policy check,
 * policy which, run, report, calibrate), each parsing its own options and
 * --help. */
#include "decide/policy.h"
#include "decide/policy_check.h"
#include "tool/tool.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct amp_command {
    const char *name;
    int (*run)(int argc, char **argv);
};

static const char amp_check_help[] =
    "usage: ampshim policy check [--] FILE|DIR...\n"
    "\n"
    "Validates each policy file and explains it: the programs it applies\n"
    "to, its settings, and each rule that can never match, that an earlier\n"
    "rule shadows, or that was not analysed (conditions with 'or'). A\n"
    "directory stands for its *.policy files, in name order (as the shim\n"
    "searches a policy directory). An error is printed on stderr as\n"
    "FILE:LINE:COLUMN: what was expected, with the nearest known word for\n"
    "a misspelt one. With a directory or more than one file, a last line\n"
    "counts them: 'N files, M with errors'. The language:\n"
    "ampshim-policy(5); example policies in\n"
    AMP_INSTALL_DATADIR "/policies.\n"
    "\n"
    "options:\n"
    "  -h, --help   this help\n"
    "\n"
    "exit status:\n"
    "  0 when every file is valid, 1 when one has an error or a directory\n"
    "  cannot be read, 2 on a usage error.\n";

static void
amp_print_action(const struct amp_policy_action *a)
{
    if (a->automatic)
        printf("auto");
    else if (a->mode == AMP_MODE_SHADOW)
        printf("shadow:%s", amp_mode_name(a->candidate));
    else
        printf("%s", amp_mode_name(a->mode));
    if (a->verify)
        printf(" verify %d", a->verify);
}

static void
amp_print_applies(const struct amp_policy *p)
{
    int i;
    size_t b;

    if (p->nmatches == 0) {
        printf("  applies to: every program (no match line)\n");
        return;
    }
    for (i = 0; i < p->nmatches; i++) {
        const struct amp_policy_match *m = &p->matches[i];

        printf("  applies to (line %d):", m->line);
        if (m->exe)
            printf(" executable %s", p->strings + m->exe);
        if (m->build_id_len) {
            printf("%s build-id ", m->exe ? " and" : "");
            for (b = 0; b < m->build_id_len; b++)
                printf("%02x", m->build_id[b]);
        }
        printf("\n");
    }
}

static void
amp_print_settings(const struct amp_policy *p)
{
    const struct amp_policy_settings *s = &p->set;

    if (s->tolerance >= 0)
        printf("  tolerance %g (%s norm): a site whose shadow relative error "
               "exceeds it stays FP32\n", s->tolerance,
               s->tolerance_norm == AMP_NORM_FRO ? "Frobenius" : "max");
    else
        printf("  no tolerance: shadow errors are measured, never acted "
               "on\n");
    if (s->shadow_rate > 0)
        printf("  shadow-rate %g: every %.0fth converted call at a site is "
               "measured\n", s->shadow_rate, 1.0 / s->shadow_rate + 0.5);
    if (s->min_size >= 0)
        printf("  min-size %lld multiply-adds: smaller calls stay FP32\n",
               (long long)s->min_size);
    if (s->scratch_max >= 0)
        printf("  scratch-max %lld bytes per call\n",
               (long long)s->scratch_max);
    if (s->library_calls)
        printf("  library-calls convert: the calls NVIDIA's libraries make "
               "are decided by the rules\n");
}

static void
amp_print_finding(const struct amp_policy *p,
                  const struct amp_policy_finding *f)
{
    const struct amp_policy_rule *r = &p->rules[f->rule < p->nrules
                                                    ? f->rule
                                                    : 0];

    switch (f->kind) {
    case AMP_FINDING_NEVER:
        printf("  line %d: rule %d never matches: its conditions "
               "contradict each other\n", r->line, f->rule + 1);
        break;
    case AMP_FINDING_SHADOWED:
        printf("  line %d: rule %d is shadowed by rule %d (line %d): every "
               "call it matches, that rule matches first\n", r->line,
               f->rule + 1, f->by + 1, p->rules[f->by].line);
        break;
    case AMP_FINDING_NOT_ANALYSED:
        printf("  line %d: rule %d not analysed (its condition has 'or')\n",
               r->line, f->rule + 1);
        break;
    case AMP_FINDING_DEFAULT_UNREACHED:
        printf("  line %d: the default is never reached: rule %d (line %d) "
               "matches every call\n", p->default_line, f->by + 1,
               p->rules[f->by].line);
        break;
    }
}

static int
amp_check_one(const char *path)
{
    static struct amp_policy p;
    static struct amp_policy_finding findings[AMP_POLICY_MAX_RULES + 1];
    struct amp_policy_error err;
    int i, n;

    if (amp_policy_load(path, &p, &err) != AMP_OK) {
        fprintf(stderr, "%s\n", err.text);
        return 1;
    }
    printf("%s: valid, %d rule%s\n", path, p.nrules,
           p.nrules == 1 ? "" : "s");
    amp_print_applies(&p);
    amp_print_settings(&p);
    for (i = 0; i < p.nrules; i++) {
        printf("  rule %d (line %d): ", i + 1, p.rules[i].line);
        amp_print_action(&p.rules[i].action);
        printf("%s\n", p.rules[i].root < 0 ? ", every call" : "");
    }
    printf("  default (line %d): ", p.default_line);
    amp_print_action(&p.fallback);
    printf("\n");
    n = amp_policy_explain(&p, findings, AMP_POLICY_MAX_RULES + 1);
    for (i = 0; i < n; i++)
        amp_print_finding(&p, &findings[i]);
    return 0;
}

/* Directory entries the shim would read: NAME.policy, not hidden. */
static int
amp_check_is_policy(const struct dirent *de)
{
    size_t len = strlen(de->d_name);

    return de->d_name[0] != '.' && len > 7 &&
           strcmp(de->d_name + len - 7, ".policy") == 0;
}

/* Name order as the shim's (bytes, not the locale's collation). */
static int
amp_check_name_cmp(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Checks each *.policy file of dir; counts them into *files and those
 * with an error into *broken. 0, or 1 when the directory cannot be
 * read. */
static int
amp_check_dir(const char *dir, int *files, int *broken)
{
    struct dirent **names;
    char path[PATH_MAX + 256];
    int i, n = scandir(dir, &names, amp_check_is_policy, amp_check_name_cmp);

    if (n < 0) {
        fprintf(stderr, "%s: cannot read the directory: %s\n", dir,
                strerror(errno));
        return 1;
    }
    if (n == 0)
        printf("%s: no *.policy file\n", dir);
    for (i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s%s%s", dir,
                 dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]->d_name);
        (*files)++;
        *broken += amp_check_one(path);
        free(names[i]);
    }
    free(names);
    return 0;
}

static int
amp_policy_check(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct amp_opt opt = {"ampshim policy check", "-:h", longopts, argc,
                          argv, 0};
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int c, i, n = 0, rc = 0;

    if (!files) {
        perror("ampshim policy check");
        return 1;
    }
    while (rc == 0 && (c = amp_opt_next(&opt)) != -1) {
        if (c == 1)
            files[n++] = optarg;
        else if (c == 'h')
            rc = -1;
        else
            rc = AMP_TOOL_USAGE;
    }
    for (; rc == 0 && optind < argc; optind++)
        files[n++] = argv[optind];
    if (rc == 0 && n == 0) {
        amp_opt_usage("ampshim policy check", "no policy file named");
        rc = AMP_TOOL_USAGE;
    }
    if (rc == -1) {
        printf("%s", amp_check_help);
        rc = 0;
    } else if (rc == 0) {
        int nfiles = 0, nbroken = 0, dirs = 0;

        for (i = 0; i < n; i++) {
            struct stat st;

            if (stat(files[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                dirs++;
                rc |= amp_check_dir(files[i], &nfiles, &nbroken);
            } else {
                nfiles++;
                nbroken += amp_check_one(files[i]);
            }
        }
        if (dirs || nfiles > 1)
            printf("%d file%s, %d with errors\n", nfiles,
                   nfiles == 1 ? "" : "s", nbroken);
        rc |= nbroken > 0;
    }
    free(files);
    return rc;
}

static const struct amp_command amp_policy_commands[] = {
    {"check", amp_policy_check},
    {"which", amp_tool_which},
    {NULL, NULL},
};

static const char amp_policy_help[] =
    "usage: ampshim policy COMMAND [ARGS...]\n"
    "\n"
    "commands:\n"
    "  check FILE|DIR...  validate and explain policy files (a directory:\n"
    "                     its *.policy files)\n"
    "  which [PROGRAM]    which policy the shim would apply to PROGRAM,\n"
    "                     and why\n"
    "\n"
    "options:\n"
    "  -h, --help         this help; 'ampshim policy COMMAND --help' for a\n"
    "                     command's\n"
    "\n"
    "exit status:\n"
    "  the command's; 2 on a usage error.\n";

static const char amp_help[] =
    "usage: ampshim [OPTIONS] COMMAND [ARGS...]\n"
    "\n"
    "Runs an unmodified FP32 CUDA program's cuBLAS GEMMs and cuDNN\n"
    "convolutions on Tensor Cores (FP16, BF16, TF32 inputs, FP32\n"
    "accumulation) through the preloaded libampshim.so, and reads what it\n"
    "reports.\n"
    "\n"
    "commands:\n"
    "  run          run a program under the shim\n"
    "  report       a report as a table, HTML page or CSV\n"
    "  calibrate    measure every mode, write a per-application policy\n"
    "  policy       check policy files, say which one applies (check,\n"
    "               which)\n"
    "\n"
    "options:\n"
    "  -h, --help     this help; 'ampshim COMMAND --help' for a command's\n"
    "  -V, --version  print 'ampshim VERSION' and exit\n"
    "\n"
    "environment:\n"
    "  AMPSHIM_LIBRARY  the library 'run' and 'calibrate' preload\n"
    "  AMPSHIM_*        the shim's settings (ampshim(1), ENVIRONMENT)\n"
    "\n"
    "exit status:\n"
    "  the command's (see its --help): 'run' exits with the program's\n"
    "  status, or 125 when nothing ran; 2 on a usage error here.\n"
    "\n"
    "See ampshim(1), ampshim-policy(5); example policies in\n"
    AMP_INSTALL_DATADIR "/policies.\n";

/* Runs the command named argv[0] of cmds, with its own arguments. */
static int
amp_dispatch(int argc, char **argv, const struct amp_command *cmds,
             const char *prefix)
{
    const struct amp_command *c;

    for (c = cmds; c->name; c++)
        if (strcmp(argv[0], c->name) == 0)
            return c->run(argc, argv);
    fprintf(stderr, "%s: unknown command '%s'; the commands:", prefix,
            argv[0]);
    for (c = cmds; c->name; c++)
        fprintf(stderr, " %s", c->name);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", prefix);
    return AMP_TOOL_USAGE;
}

/* A command group's options (help, version), then its command: prefix
 * names it ("ampshim"), help is its --help. */
static int
amp_group_main(int argc, char **argv, const struct amp_command *cmds,
               const char *prefix, const char *help, int version)
{
    static const struct option longopts[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    struct amp_opt opt = {prefix, version ? "+:hV" : "+:h", longopts, argc,
                          argv, 0};
    int c;

    while ((c = amp_opt_next(&opt)) != -1) {
        switch (c) {
        case 'h':
            printf("%s", help);
            return 0;
        case 'V':
            if (version) {
                printf("ampshim %s\n", AMP_VERSION);
                return 0;
            }
            amp_opt_usage(prefix, "unknown option '--version'");
            return AMP_TOOL_USAGE;
        default:
            return AMP_TOOL_USAGE;
        }
    }
    if (optind >= argc) {
        amp_opt_usage(prefix, "no command given");
        return AMP_TOOL_USAGE;
    }
    return amp_dispatch(argc - optind, argv + optind, cmds, prefix);
}

static int
amp_policy_main(int argc, char **argv)
{
    return amp_group_main(argc, argv, amp_policy_commands, "ampshim policy",
                          amp_policy_help, 0);
}

static const struct amp_command amp_commands[] = {
    {"run", amp_tool_run},
    {"report", amp_tool_report},
    {"calibrate", amp_tool_calibrate},
    {"policy", amp_policy_main},
    {NULL, NULL},
};

int
main(int argc, char **argv)
{
    return amp_group_main(argc, argv, amp_commands, "ampshim", amp_help, 1);
}
