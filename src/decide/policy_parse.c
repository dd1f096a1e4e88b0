/* The policy language: a line-oriented parser (over policy_lex.c's tokens)
 * into a fixed-size struct, no allocation; the files it reads. */
#include "decide/policy_lex.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Condition nodes ---------------------------------------------------- */

static const char *const amp_cmp_names[] = {"<", "<=", "==", "!=", ">=", ">"};

/* Field names are case-sensitive: k is the GEMM's inner dimension, K a
 * convolution's output channels. */
struct amp_field_info {
    const char *name;
    int family;                  /* AMP_FAMILY_*, -1: every call */
    const char *const *values;   /* symbolic values, NULL: numbers */
};

static const char *const amp_op_values[] = {"n", "t", NULL};
static const char *const amp_layout_values[] = {"nchw", "nhwc", NULL};
static const char *const amp_math_values[] = {"default", "pedantic", NULL};
static const char *const amp_epi_values[] = {
    [AMP_EPI_DEFAULT] = "default",
    [AMP_EPI_RELU] = "relu",
    [AMP_EPI_RELU_AUX] = "relu-aux",
    [AMP_EPI_BIAS] = "bias",
    [AMP_EPI_RELU_BIAS] = "relu-bias",
    [AMP_EPI_RELU_AUX_BIAS] = "relu-aux-bias",
    [AMP_EPI_GELU] = "gelu",
    [AMP_EPI_GELU_AUX] = "gelu-aux",
    [AMP_EPI_GELU_BIAS] = "gelu-bias",
    [AMP_EPI_GELU_AUX_BIAS] = "gelu-aux-bias",
    [AMP_EPI_COUNT] = NULL,
};

const char *
amp_epi_name(enum amp_epi e)
{
    return (unsigned)e < AMP_EPI_COUNT ? amp_epi_values[e] : "?";
}

static const struct amp_field_info amp_fields[AMP_FIELD_COUNT] = {
    [AMP_FIELD_M] = {"m", AMP_FAMILY_GEMM, NULL},
    [AMP_FIELD_N] = {"n", AMP_FAMILY_GEMM, NULL},
    [AMP_FIELD_K] = {"k", AMP_FAMILY_GEMM, NULL},
    [AMP_FIELD_BATCH] = {"batch", AMP_FAMILY_GEMM, NULL},
    [AMP_FIELD_TRANSA] = {"transa", AMP_FAMILY_GEMM, amp_op_values},
    [AMP_FIELD_TRANSB] = {"transb", AMP_FAMILY_GEMM, amp_op_values},
    [AMP_FIELD_CONV_N] = {"N", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_CONV_C] = {"C", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_CONV_H] = {"H", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_CONV_W] = {"W", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_CONV_K] = {"K", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_CONV_R] = {"R", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_CONV_S] = {"S", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_GROUPS] = {"groups", AMP_FAMILY_CONV, NULL},
    [AMP_FIELD_LAYOUT] = {"layout", AMP_FAMILY_CONV, amp_layout_values},
    [AMP_FIELD_EPILOGUE] = {"epilogue", AMP_FAMILY_GEMM, amp_epi_values},
    [AMP_FIELD_MATH] = {"math", -1, amp_math_values},
    [AMP_FIELD_CALL] = {"call", -1, NULL},
};

static const char *const amp_family_names[AMP_FAMILY_COUNT] = {"gemm",
                                                               "conv"};

/* Actions: every precision mode (docs/design.md). */
struct amp_action_name {
    const char *name;
    enum amp_mode mode, candidate;
};

static const struct amp_action_name amp_actions[] = {
    {"fp32", AMP_MODE_FP32, AMP_MODE_FP16},
    {"fp16", AMP_MODE_FP16, AMP_MODE_FP16},
    {"bf16", AMP_MODE_BF16, AMP_MODE_FP16},
    {"tf32", AMP_MODE_TF32, AMP_MODE_FP16},
    {"fp16x3", AMP_MODE_FP16X3, AMP_MODE_FP16},
    {"tf32x3", AMP_MODE_TF32X3, AMP_MODE_FP16},
    {"bf16x9", AMP_MODE_BF16X9, AMP_MODE_FP16},
    {"allow-conversion", AMP_MODE_ALLOW_CONVERSION, AMP_MODE_FP16},
    {"shadow", AMP_MODE_SHADOW, AMP_MODE_FP16},
    {"shadow:fp16", AMP_MODE_SHADOW, AMP_MODE_FP16},
    {"shadow:bf16", AMP_MODE_SHADOW, AMP_MODE_BF16},
    {"shadow:tf32", AMP_MODE_SHADOW, AMP_MODE_TF32},
    {"shadow:fp16x3", AMP_MODE_SHADOW, AMP_MODE_FP16X3},
    {"shadow:tf32x3", AMP_MODE_SHADOW, AMP_MODE_TF32X3},
    {"shadow:bf16x9", AMP_MODE_SHADOW, AMP_MODE_BF16X9},
    {"shadow:allow-conversion", AMP_MODE_SHADOW, AMP_MODE_ALLOW_CONVERSION},
    {"auto", AMP_MODE_FP16, AMP_MODE_FP16},
    {NULL, AMP_MODE_FP32, AMP_MODE_FP32},
};

#define AMP_ACTION_LIST                                                      \
    "fp32, fp16, bf16, tf32, fp16x3, tf32x3, bf16x9, allow-conversion, "     \
    "auto, shadow or shadow:MODE"

/* The words each place of a line takes, for suggestions. */
static const char *const amp_statement_words[] = {"match", "set", "rule",
                                                  "default", NULL};
static const char *const amp_setting_words[] = {
    "tolerance", "shadow-rate", "min-size", "scratch-max", "library-calls",
    NULL};
static const char *const amp_library_calls_words[] = {"convert", "fp32",
                                                      NULL};
static const char *const amp_norm_words[] = {"max", "fro", "frobenius",
                                             "l2", NULL};
static const char *const amp_condition_words[] = {
    "gemm", "conv", "lt", "symbol", "caller", "module", "not", NULL};
static const char *const amp_and_or[] = {"and", "or", NULL};
static const char *const amp_verify_when[] = {"verify", "when", NULL};
static const char *const amp_when[] = {"when", NULL};

static int
amp_parse_action(struct amp_parser *ps, struct amp_policy_action *a)
{
    const struct amp_action_name *e;

    memset(a, 0, sizeof *a);
    for (e = amp_actions; e->name; e++) {
        if (amp_tok_is(&ps->tok, e->name)) {
            a->mode = e->mode;
            a->candidate = e->candidate;
            a->automatic = strcmp(e->name, "auto") == 0;
            amp_next(ps);
            break;
        }
    }
    if (!e->name) {
        struct amp_near near;

        amp_near_init(&near, &ps->tok);
        for (e = amp_actions; e->name; e++)
            amp_near_try(&near, e->name);
        amp_unknown(ps, "action", &near, "an action (" AMP_ACTION_LIST ")");
        return -1;
    }
    if (amp_tok_is(&ps->tok, "verify")) {
        int64_t n;

        if (a->mode == AMP_MODE_FP32 || a->mode == AMP_MODE_SHADOW) {
            amp_fail(ps, ps->tok.col, "expected 'when' or end of line: "
                     "'verify' needs a converting action, not %s",
                     amp_mode_name(a->mode));
            return -1;
        }
        if (a->automatic) {
            amp_fail(ps, ps->tok.col, "expected 'when' or end of line: "
                     "auto measures every candidate in shadow first and "
                     "takes no 'verify'");
            return -1;
        }
        amp_next(ps);
        if (amp_parse_int(&ps->tok, 0, &n) != 0 || n < 1 || n > 1000000) {
            amp_expected(ps, "a count of calls from 1 to 1000000 after "
                         "'verify'");
            return -1;
        }
        a->verify = (int)n;
        amp_next(ps);
    }
    return 0;
}

/* ---- Conditions --------------------------------------------------------- */

static int
amp_new_node(struct amp_parser *ps, int kind)
{
    struct amp_policy *p = ps->p;
    struct amp_policy_node *n;

    if (p->nnodes >= AMP_POLICY_MAX_NODES) {
        amp_fail(ps, ps->tok.col, "too many conditions: at most %d tests "
                 "and operators in a policy", AMP_POLICY_MAX_NODES);
        return -1;
    }
    n = &p->nodes[p->nnodes];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->left = n->right = -1;
    return p->nnodes++;
}

static int amp_parse_or(struct amp_parser *ps, unsigned *uses);

static int
amp_parse_field_name(const struct amp_tok *t)
{
    int f;

    for (f = 0; f < AMP_FIELD_COUNT; f++)
        if (amp_tok_is(t, amp_fields[f].name))
            return f;
    return -1;
}

static int
amp_parse_cmp(struct amp_parser *ps, int equality_only)
{
    int c;

    if (ps->tok.kind == AMP_TOK_OP) {
        for (c = 0; c <= AMP_CMP_GT; c++) {
            if (equality_only && c != AMP_CMP_EQ && c != AMP_CMP_NE)
                continue;
            if (ps->tok.len == strlen(amp_cmp_names[c]) &&
                memcmp(ps->tok.at, amp_cmp_names[c], ps->tok.len) == 0) {
                amp_next(ps);
                return c;
            }
        }
    }
    amp_expected(ps, equality_only ? "'==' or '!='"
                                   : "a comparison (<, <=, ==, !=, >=, >)");
    return -1;
}

/* field cmp value | field % modulus (==|!=) value */
static int
amp_parse_compare(struct amp_parser *ps, int field, unsigned *uses)
{
    const struct amp_field_info *fi = &amp_fields[field];
    struct amp_policy_node *n;
    char what[192];
    int id, cmp;
    int64_t modulus = 0, value = 0;

    amp_next(ps);
    if (!fi->values && ps->tok.kind == AMP_TOK_OP && ps->tok.len == 1 &&
        ps->tok.at[0] == '%') {
        amp_next(ps);
        if (amp_parse_int(&ps->tok, 0, &modulus) != 0 || modulus < 1) {
            amp_expected(ps, "a positive divisor after '%'");
            return -1;
        }
        amp_next(ps);
    }
    cmp = amp_parse_cmp(ps, fi->values != NULL || modulus > 0);
    if (cmp < 0)
        return -1;
    if (fi->values) {
        const char *const *v;

        for (v = fi->values; *v; v++)
            if (amp_tok_is(&ps->tok, *v))
                break;
        if (!*v) {
            struct amp_near near;
            char kind[48];
            size_t len = 0;

            for (v = fi->values; *v && len < sizeof what; v++)
                len += (size_t)snprintf(what + len, sizeof what - len,
                                        "%s%s", *v,
                                        !v[1] ? ""
                                        : !v[2] ? " or " : ", ");
            if (len < sizeof what)
                snprintf(what + len, sizeof what - len, " after '%s %s'",
                         fi->name, amp_cmp_names[cmp]);
            amp_near_init(&near, &ps->tok);
            amp_near_try_all(&near, fi->values);
            snprintf(kind, sizeof kind, "%s value", fi->name);
            amp_unknown(ps, kind, &near, what);
            return -1;
        }
        value = v - fi->values;
    } else if (amp_parse_int(&ps->tok, 0, &value) != 0) {
        snprintf(what, sizeof what, "a non-negative integer after '%s%s %s'",
                 fi->name, modulus ? " % N" : "", amp_cmp_names[cmp]);
        amp_expected(ps, what);
        return -1;
    }
    amp_next(ps);
    id = amp_new_node(ps, modulus ? AMP_NODE_DIVIDES : AMP_NODE_COMPARE);
    if (id < 0)
        return -1;
    n = &ps->p->nodes[id];
    n->field = (uint8_t)field;
    n->op = (uint8_t)cmp;
    n->value = value;
    n->modulus = modulus;
    *uses |= 1u << field;
    return id;
}

/* symbol|caller|module GLOB */
static int
amp_parse_glob_test(struct amp_parser *ps, int kind, const char *what)
{
    char msg[64];
    uint32_t text;
    int id;

    amp_next(ps);
    if (ps->tok.kind != AMP_TOK_WORD && ps->tok.kind != AMP_TOK_STRING) {
        snprintf(msg, sizeof msg, "a glob after '%s'", what);
        amp_expected(ps, msg);
        return -1;
    }
    text = amp_store_text(ps, &ps->tok);
    if (ps->failed)
        return -1;
    amp_next(ps);
    id = amp_new_node(ps, kind);
    if (id >= 0) {
        ps->p->nodes[id].text = text;
        if (kind != AMP_NODE_SYMBOL)
            ps->p->uses_site = 1;
    }
    return id;
}

static int
amp_parse_primary(struct amp_parser *ps, unsigned *uses)
{
    struct amp_near near;
    int id, field, f, col = ps->tok.col;

    if (ps->tok.kind == AMP_TOK_LPAREN || amp_tok_is(&ps->tok, "not")) {
        int paren = ps->tok.kind == AMP_TOK_LPAREN;

        if (++ps->depth > AMP_POLICY_MAX_DEPTH) {
            amp_fail(ps, col, "conditions nest too deeply: at most %d "
                     "levels of parentheses and 'not'",
                     AMP_POLICY_MAX_DEPTH);
            return -1;
        }
        amp_next(ps);
        if (paren) {
            id = amp_parse_or(ps, uses);
            if (id >= 0 && ps->tok.kind != AMP_TOK_RPAREN) {
                amp_expect_keyword(ps, amp_and_or, "')' or 'and' or 'or'");
                return -1;
            }
            if (id >= 0)
                amp_next(ps);
        } else {
            int operand = amp_parse_primary(ps, uses);

            id = operand < 0 ? -1 : amp_new_node(ps, AMP_NODE_NOT);
            if (id >= 0)
                ps->p->nodes[id].left = (int16_t)operand;
        }
        ps->depth--;
        return id;
    }
    for (f = 0; f < AMP_FAMILY_COUNT; f++) {
        if (amp_tok_is(&ps->tok, amp_family_names[f])) {
            amp_next(ps);
            id = amp_new_node(ps, AMP_NODE_FAMILY);
            if (id >= 0)
                ps->p->nodes[id].value = f;
            return id;
        }
    }
    if (amp_tok_is(&ps->tok, "lt")) {
        amp_next(ps);
        return amp_new_node(ps, AMP_NODE_LT);
    }
    if (amp_tok_is(&ps->tok, "symbol"))
        return amp_parse_glob_test(ps, AMP_NODE_SYMBOL, "symbol");
    if (amp_tok_is(&ps->tok, "caller"))
        return amp_parse_glob_test(ps, AMP_NODE_CALLER, "caller");
    if (amp_tok_is(&ps->tok, "module"))
        return amp_parse_glob_test(ps, AMP_NODE_MODULE, "module");
    field = amp_parse_field_name(&ps->tok);
    if (field >= 0)
        return amp_parse_compare(ps, field, uses);
    amp_near_init(&near, &ps->tok);
    amp_near_try_all(&near, amp_condition_words);
    for (f = 0; f < AMP_FIELD_COUNT; f++)
        amp_near_try(&near, amp_fields[f].name);
    for (f = 0; near.best && f < AMP_FIELD_COUNT; f++)
        if (near.best == amp_fields[f].name)
            break;
    amp_unknown(ps, near.best && f < AMP_FIELD_COUNT ? "field" : "condition",
                &near,
                "a condition (gemm, lt, conv, symbol, caller, module, "
                "not, '(' or a field: m, n, k, batch, transa, transb, "
                "epilogue, N, C, H, W, K, R, S, groups, layout, math, "
                "call)");
    return -1;
}

/* One level of a binary operator: operand { word operand }. */
static int
amp_parse_binary(struct amp_parser *ps, unsigned *uses, const char *word,
                 int kind)
{
    int left = kind == AMP_NODE_AND ? amp_parse_primary(ps, uses)
                                    : amp_parse_binary(ps, uses, "and",
                                                       AMP_NODE_AND);

    while (left >= 0 && amp_tok_is(&ps->tok, word)) {
        int right, id;

        amp_next(ps);
        right = kind == AMP_NODE_AND
                    ? amp_parse_primary(ps, uses)
                    : amp_parse_binary(ps, uses, "and", AMP_NODE_AND);
        if (right < 0)
            return -1;
        id = amp_new_node(ps, kind);
        if (id < 0)
            return -1;
        ps->p->nodes[id].left = (int16_t)left;
        ps->p->nodes[id].right = (int16_t)right;
        left = id;
    }
    return left;
}

static int
amp_parse_or(struct amp_parser *ps, unsigned *uses)
{
    return amp_parse_binary(ps, uses, "or", AMP_NODE_OR);
}

/* ---- Statements ------------------------------------------------------------ */

static void
amp_expect_end(struct amp_parser *ps, const char *what)
{
    if (!ps->failed && ps->tok.kind != AMP_TOK_END)
        amp_expected(ps, what);
}

static int
amp_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* match exe GLOB [build-id HEX] | match build-id HEX [exe GLOB] */
static void
amp_parse_match(struct amp_parser *ps)
{
    struct amp_policy *p = ps->p;
    struct amp_policy_match *m;
    int any = 0;

    if (p->nmatches >= AMP_POLICY_MAX_MATCHES) {
        amp_fail(ps, 1, "too many match lines: at most %d",
                 AMP_POLICY_MAX_MATCHES);
        return;
    }
    m = &p->matches[p->nmatches];
    memset(m, 0, sizeof *m);
    m->line = ps->lineno;
    amp_next(ps);
    for (;;) {
        if (amp_tok_is(&ps->tok, "exe") && !m->exe) {
            amp_next(ps);
            if (ps->tok.kind != AMP_TOK_WORD &&
                ps->tok.kind != AMP_TOK_STRING) {
                amp_expected(ps, "a glob of the executable's name after "
                             "'exe'");
                return;
            }
            /* Offset 0 means "any": keep a byte before the first glob. */
            if (p->strings_used == 0)
                p->strings_used = 1;
            m->exe = amp_store_text(ps, &ps->tok);
        } else if (amp_tok_is(&ps->tok, "build-id") && !m->build_id_len) {
            const struct amp_tok *t;
            size_t i;

            amp_next(ps);
            t = &ps->tok;
            if (t->kind != AMP_TOK_WORD || t->text_len % 2 != 0 ||
                t->text_len < 2 ||
                t->text_len > 2 * AMP_POLICY_BUILD_ID_MAX) {
                amp_expected(ps, "an even number of hex digits after "
                             "'build-id'");
                return;
            }
            for (i = 0; i < t->text_len; i += 2) {
                int hi = amp_hex_value(t->text[i]);
                int lo = amp_hex_value(t->text[i + 1]);

                if (hi < 0 || lo < 0) {
                    amp_fail(ps, t->col + (int)i + (hi < 0 ? 0 : 1),
                             "expected a hex digit in the build-id, found "
                             "'%c'", hi < 0 ? t->text[i] : t->text[i + 1]);
                    return;
                }
                m->build_id[i / 2] = (unsigned char)(hi << 4 | lo);
            }
            m->build_id_len = t->text_len / 2;
        } else {
            struct amp_near near;

            amp_near_init(&near, &ps->tok);
            if (!m->exe)
                amp_near_try(&near, "exe");
            if (!m->build_id_len)
                amp_near_try(&near, "build-id");
            amp_unknown(ps, "keyword", &near,
                        any ? "'exe', 'build-id' or end of line"
                            : "'exe' or 'build-id' after 'match'");
            return;
        }
        if (ps->failed)
            return;
        any = 1;
        amp_next(ps);
        if (ps->tok.kind == AMP_TOK_END)
            break;
    }
    p->nmatches++;
}

/* The optional norm after `set tolerance X`: max (the default) or fro,
 * or one of their other names (amp_norm_parse). */
static void
amp_parse_norm(struct amp_parser *ps, enum amp_norm *norm)
{
    char word[AMP_NEAR_MAX + 1];
    struct amp_near near;

    amp_next(ps);
    if (ps->tok.kind == AMP_TOK_END)
        return;
    if (ps->tok.kind == AMP_TOK_WORD && ps->tok.text_len < sizeof word &&
        amp_norm_parse(amp_tok_copy(&ps->tok, word, sizeof word), norm) ==
            AMP_OK) {
        amp_next(ps);
        amp_expect_end(ps, "end of line after the tolerance's norm");
        return;
    }
    amp_near_init(&near, &ps->tok);
    amp_near_try_all(&near, amp_norm_words);
    amp_unknown(ps, "norm", &near, "a norm (" AMP_NORM_WORDS ") or end of "
                "line after the tolerance");
}

/* set NAME VALUE; set tolerance X [NORM] */
static void
amp_parse_set(struct amp_parser *ps)
{
    struct amp_policy_settings *s = &ps->p->set;
    const char *expected = NULL;

    amp_next(ps);
    if (amp_tok_is(&ps->tok, "tolerance")) {
        amp_next(ps);
        if (amp_parse_real(&ps->tok, &s->tolerance) != 0) {
            amp_expected(ps, "a non-negative number (1e-3) after "
                         "'tolerance'");
            return;
        }
        amp_parse_norm(ps, &s->tolerance_norm);
        return;
    } else if (amp_tok_is(&ps->tok, "shadow-rate")) {
        amp_next(ps);
        if (amp_parse_real(&ps->tok, &s->shadow_rate) != 0 ||
            s->shadow_rate > 1)
            expected = "a share of calls from 0 to 1 after 'shadow-rate'";
    } else if (amp_tok_is(&ps->tok, "min-size")) {
        amp_next(ps);
        if (amp_parse_int(&ps->tok, 1, &s->min_size) != 0)
            expected = "a count of multiply-adds (digits with an optional "
                       "K, M or G) after 'min-size'";
    } else if (amp_tok_is(&ps->tok, "scratch-max")) {
        amp_next(ps);
        if (amp_parse_int(&ps->tok, 1, &s->scratch_max) != 0)
            expected = "a byte count (digits with an optional K, M or G) "
                       "after 'scratch-max'";
    } else if (amp_tok_is(&ps->tok, "library-calls")) {
        amp_next(ps);
        if (amp_tok_is(&ps->tok, "convert") || amp_tok_is(&ps->tok, "fp32")) {
            s->library_calls = amp_tok_is(&ps->tok, "convert");
        } else {
            amp_expect_keyword(ps, amp_library_calls_words,
                               "'convert' or 'fp32' after 'library-calls'");
            return;
        }
    } else {
        struct amp_near near;

        amp_near_init(&near, &ps->tok);
        amp_near_try_all(&near, amp_setting_words);
        amp_unknown(ps, "setting", &near, "a setting (tolerance, "
                    "shadow-rate, min-size, scratch-max, library-calls) "
                    "after 'set'");
        return;
    }
    if (expected) {
        amp_expected(ps, expected);
        return;
    }
    amp_next(ps);
    amp_expect_end(ps, "end of line after the setting's value");
}

/* rule ACTION [verify N] [when CONDITION] */
static void
amp_parse_rule(struct amp_parser *ps)
{
    struct amp_policy *p = ps->p;
    struct amp_policy_rule *r;
    int col = ps->tok.col;

    if (p->nrules >= AMP_POLICY_MAX_RULES) {
        amp_fail(ps, col, "too many rules: at most %d",
                 AMP_POLICY_MAX_RULES);
        return;
    }
    r = &p->rules[p->nrules];
    memset(r, 0, sizeof *r);
    r->line = ps->lineno;
    r->col = col;
    r->root = -1;
    amp_next(ps);
    if (amp_parse_action(ps, &r->action) != 0)
        return;
    if (amp_tok_is(&ps->tok, "when")) {
        amp_next(ps);
        ps->depth = 0;
        r->root = amp_parse_or(ps, &r->uses);
        if (r->root < 0)
            return;
        if (ps->tok.kind != AMP_TOK_END)
            amp_expect_keyword(ps, amp_and_or, "'and', 'or' or end of line");
    } else if (ps->tok.kind != AMP_TOK_END) {
        amp_expect_keyword(ps, r->action.verify ? amp_when : amp_verify_when,
                           r->action.verify ? "'when' or end of line"
                                            : "'verify', 'when' or end of "
                                              "line");
    }
    if (!ps->failed)
        p->nrules++;
}

static void
amp_parse_statement(struct amp_parser *ps)
{
    struct amp_policy *p = ps->p;

    amp_next(ps);
    if (ps->tok.kind == AMP_TOK_END)
        return;
    if (p->default_line) {
        amp_expected(ps, "nothing after the closing 'default' (a comment "
                     "or a blank line)");
        return;
    }
    if (amp_tok_is(&ps->tok, "match") || amp_tok_is(&ps->tok, "set")) {
        if (p->nrules > 0) {
            amp_fail(ps, ps->tok.col, "expected 'rule' or 'default': "
                     "'%.*s' lines come before the first rule",
                     (int)ps->tok.len, ps->tok.at);
            return;
        }
        if (amp_tok_is(&ps->tok, "match"))
            amp_parse_match(ps);
        else
            amp_parse_set(ps);
    } else if (amp_tok_is(&ps->tok, "rule")) {
        amp_parse_rule(ps);
    } else if (amp_tok_is(&ps->tok, "default")) {
        amp_next(ps);
        if (amp_parse_action(ps, &p->fallback) != 0)
            return;
        if (p->fallback.verify) {
            amp_fail(ps, 9, "expected end of line: the default takes no "
                     "'verify'");
            return;
        }
        amp_expect_end(ps, "end of line after the default's action");
        if (!ps->failed)
            p->default_line = ps->lineno;
    } else {
        struct amp_near near;

        amp_near_init(&near, &ps->tok);
        amp_near_try_all(&near, amp_statement_words);
        amp_unknown(ps, "statement", &near,
                    "a statement (match, set, rule, default)");
    }
}

static void
amp_policy_reset(struct amp_policy *p, const char *name)
{
    memset(p, 0, offsetof(struct amp_policy, nodes));
    p->nnodes = 0;
    p->strings_used = 0;
    snprintf(p->name, sizeof p->name, "%s", name);
    p->set.tolerance = -1;
    p->set.shadow_rate = -1;
    p->set.min_size = -1;
    p->set.scratch_max = -1;
}

/* A match-only parse reads a line when its first word is `match`: one
 * after a rule or the default is out of place, as in a whole parse. */
static int
amp_match_line(struct amp_parser *ps, int *after_rules)
{
    amp_next(ps);
    if (amp_tok_is(&ps->tok, "match")) {
        if (*after_rules)
            amp_fail(ps, ps->tok.col, "expected 'rule' or 'default': "
                     "'match' lines come before the first rule");
        ps->pos = 0;
        return !ps->failed;
    }
    if (amp_tok_is(&ps->tok, "rule") || amp_tok_is(&ps->tok, "default"))
        *after_rules = 1;
    /* An unclosed quote elsewhere is not this parse's concern. */
    ps->failed = 0;
    memset(ps->err, 0, sizeof *ps->err);
    return 0;
}

/* The whole text, or (matches_only) just its match lines. */
static enum amp_status
amp_parse_text(const char *text, size_t len, const char *name,
               struct amp_policy *p, struct amp_policy_error *err,
               int matches_only)
{
    struct amp_parser ps = {.p = p, .err = err};
    size_t at = 0;
    int after_rules = 0;

    memset(err, 0, sizeof *err);
    amp_policy_reset(p, name);
    while (at < len && !ps.failed) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;

        ps.lineno++;
        ps.line = text + at;
        ps.line_len = end - at;
        ps.pos = 0;
        at = end + 1;
        if (matches_only && !amp_match_line(&ps, &after_rules))
            continue;
        if (ps.failed)
            break;
        if (ps.line_len > AMP_POLICY_MAX_LINE) {
            amp_fail(&ps, AMP_POLICY_MAX_LINE + 1, "expected at most %d "
                     "bytes on a line", AMP_POLICY_MAX_LINE);
            break;
        }
        if (memchr(ps.line, '\0', ps.line_len)) {
            amp_fail(&ps, (int)((const char *)memchr(ps.line, '\0',
                                                      ps.line_len) -
                                ps.line) + 1,
                     "expected text, found a NUL byte");
            break;
        }
        amp_parse_statement(&ps);
    }
    if (!matches_only && !ps.failed && !p->default_line) {
        ps.lineno = ps.lineno + (len > 0 && text[len - 1] != '\n' ? 0 : 1);
        if (ps.lineno == 0)
            ps.lineno = 1;
        amp_fail(&ps, 1, "expected a closing 'default ACTION' before the "
                 "end of the file");
    }
    if (ps.failed) {
        snprintf(err->text, sizeof err->text, "%s:%d:%d: %s", name,
                 err->line, err->col, err->message);
        return AMP_ERR_INVALID;
    }
    return AMP_OK;
}

enum amp_status
amp_policy_parse(const char *text, size_t len, const char *name,
                 struct amp_policy *p, struct amp_policy_error *err)
{
    return amp_parse_text(text, len, name, p, err, 0);
}

enum amp_status
amp_policy_parse_matches(const char *text, size_t len, const char *name,
                         struct amp_policy *p, struct amp_policy_error *err)
{
    return amp_parse_text(text, len, name, p, err, 1);
}

/* A file-level error (line 0): the file as a whole could not be read. */
static void
amp_file_error(struct amp_policy *p, struct amp_policy_error *err,
               const char *path, const char *message)
{
    amp_policy_reset(p, path);
    memset(err, 0, sizeof *err);
    snprintf(err->message, sizeof err->message, "%s", message);
    snprintf(err->text, sizeof err->text, "%s: %s", path, err->message);
}

enum amp_status
amp_policy_load_matches(const char *path, struct amp_policy *p,
                        struct amp_policy_error *err, int *matches_read,
                        struct amp_policy_error *match_err)
{
    /* The bounds make a valid file smaller than this. */
    enum { CAP = (AMP_POLICY_MAX_LINE + 1) * 2048 };
    static char buf[CAP];
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    struct amp_policy_error scratch;
    enum amp_status st;
    size_t len = 0;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (matches_read)
        *matches_read = 0;
    if (!match_err)
        match_err = &scratch;
    memset(match_err, 0, sizeof *match_err);
    if (fd < 0) {
        char message[200];

        snprintf(message, sizeof message, "cannot read: %s",
                 strerror(errno));
        amp_file_error(p, err, path, message);
        *match_err = *err;
        return AMP_ERR_INVALID;
    }
    pthread_mutex_lock(&lock);
    while (len < CAP && (got = read(fd, buf + len, CAP - len)) > 0)
        len += (size_t)got;
    close(fd);
    if (len == CAP) {
        char message[100];

        snprintf(message, sizeof message, "expected at most %d bytes in a "
                 "policy file", CAP - 1);
        amp_file_error(p, err, path, message);
        *match_err = *err;
        st = AMP_ERR_INVALID;
    } else {
        st = amp_policy_parse(buf, len, path, p, err);
        if (st != AMP_OK && matches_read &&
            amp_policy_parse_matches(buf, len, path, p, match_err) == AMP_OK)
            *matches_read = 1;
    }
    pthread_mutex_unlock(&lock);
    return st;
}

enum amp_status
amp_policy_load(const char *path, struct amp_policy *p,
                struct amp_policy_error *err)
{
    return amp_policy_load_matches(path, p, err, NULL, NULL);
}
