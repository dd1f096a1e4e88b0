/* The `ampshim` command-line tool: one table of subcommands (policy check,
 * run, report, calibrate), each with its own --help. */
#include "decide/policy.h"
#include "decide/policy_check.h"
#include "tool/tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct amp_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    const char *help;
    int own_help;             /* parses its own --help: the arguments
                                 after its options are a program's */
};

static const char amp_check_help[] =
    "usage: ampshim policy check FILE...\n"
    "\n"
    "Validates each policy file and explains it: the programs it applies\n"
    "to, its settings, and each rule that can never match, that an earlier\n"
    "rule shadows, or that was not analysed (conditions with 'or'). An\n"
    "error is printed as FILE:LINE:COLUMN: what was expected.\n"
    "\n"
    "Exit status: 0 when every file is valid, 1 when one has an error,\n"
    "2 on a usage error. The language: policy/README.md.\n";

static void
amp_print_action(const struct amp_policy_action *a)
{
    if (a->mode == AMP_MODE_SHADOW)
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
        printf("  tolerance %g: a site whose shadow relative error exceeds "
               "it stays FP32\n", s->tolerance);
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

static int
amp_policy_check(int argc, char **argv)
{
    int i, failed = 0;

    if (argc < 2) {
        fprintf(stderr, "%s", amp_check_help);
        return 2;
    }
    for (i = 1; i < argc; i++)
        failed |= amp_check_one(argv[i]);
    return failed;
}

static const struct amp_command amp_policy_commands[] = {
    {"check", "validate and explain policy files", amp_policy_check,
     amp_check_help, 0},
    {NULL, NULL, NULL, NULL, 0},
};

static void
amp_list(FILE *out, const char *prefix, const struct amp_command *cmds)
{
    const struct amp_command *c;

    for (c = cmds; c->name; c++)
        fprintf(out, "  %s %-10s %s\n", prefix, c->name, c->summary);
}

/* Runs the subcommand named argv[0] of cmds; --help anywhere after it
 * prints its help. */
static int
amp_dispatch(int argc, char **argv, const struct amp_command *cmds,
             const char *prefix)
{
    const struct amp_command *c;
    int i;

    if (argc < 1 || strcmp(argv[0], "--help") == 0 ||
        strcmp(argv[0], "-h") == 0) {
        FILE *out = argc < 1 ? stderr : stdout;

        fprintf(out, "usage: %s COMMAND [ARGS]\n\ncommands:\n", prefix);
        amp_list(out, prefix, cmds);
        return argc < 1 ? 2 : 0;
    }
    for (c = cmds; c->name; c++) {
        if (strcmp(argv[0], c->name) != 0)
            continue;
        for (i = 1; i < argc && !c->own_help; i++) {
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                printf("%s", c->help);
                return 0;
            }
        }
        return c->run(argc, argv);
    }
    fprintf(stderr, "%s: unknown command '%s'; commands:\n", prefix, argv[0]);
    amp_list(stderr, prefix, cmds);
    return 2;
}

static int
amp_policy_main(int argc, char **argv)
{
    return amp_dispatch(argc - 1, argv + 1, amp_policy_commands,
                        "ampshim policy");
}

static const char amp_policy_help[] =
    "usage: ampshim policy COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  ampshim policy check FILE...   validate and explain policy files\n";

static const struct amp_command amp_commands[] = {
    {"policy", "policy files (check)", amp_policy_main, amp_policy_help, 0},
    {"run", "run a program under the shim", amp_tool_run, amp_tool_run_help,
     1},
    {"report", "a report as a table, HTML and CSV", amp_tool_report,
     amp_tool_report_help, 0},
    {"calibrate", "measure every mode, write a per-application policy",
     amp_tool_calibrate, amp_tool_calibrate_help, 1},
    {NULL, NULL, NULL, NULL, 0},
};

int
main(int argc, char **argv)
{
    /* `ampshim policy --help` is the policy group's own help. */
    if (argc >= 2 && strcmp(argv[1], "policy") == 0)
        return amp_policy_main(argc - 1, argv + 1);
    return amp_dispatch(argc - 1, argv + 1, amp_commands, "ampshim");
}
