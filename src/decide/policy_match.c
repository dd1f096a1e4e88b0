/* Matching a call against a policy: each rule's condition evaluated on
 * the call's fields (three-valued: a test of the call count is unknown
 * until the count is), min-size, pedantic math. */
#include "decide/policy_match.h"

#include "decide/symbolize.h" /* AMP_SYMBOL_LEN only: the fuzz targets
                                 link this file without symbolize.c */

#include <fnmatch.h>
#include <string.h>

void
amp_policy_call_set(struct amp_policy_call *call, enum amp_field field,
                    int64_t value)
{
    call->field[field] = value;
    call->present |= 1u << field;
}

static int
amp_compare(int64_t a, int op, int64_t b)
{
    switch (op) {
    case AMP_CMP_LT:
        return a < b;
    case AMP_CMP_LE:
        return a <= b;
    case AMP_CMP_EQ:
        return a == b;
    case AMP_CMP_NE:
        return a != b;
    case AMP_CMP_GE:
        return a >= b;
    default:
        return a > b;
    }
}

static int
amp_glob(const char *glob, const char *text)
{
    return text && fnmatch(glob, text, 0) == 0;
}

/* A caller glob matches the function's name (demangled, without compiler
 * suffixes) or its symbol, with or without the suffixes. */
static int
amp_glob_caller(const char *glob, const struct amp_policy_call *c)
{
    char base[AMP_SYMBOL_LEN];
    size_t n = c->caller_symbol_base;

    if (amp_glob(glob, c->caller) || amp_glob(glob, c->caller_symbol))
        return 1;
    if (!c->caller_symbol || n >= sizeof base || !c->caller_symbol[n])
        return 0;
    memcpy(base, c->caller_symbol, n);
    base[n] = '\0';
    return amp_glob(glob, base);
}

/* A module glob with a '/' matches the whole path, else the file name. */
static int
amp_glob_file(const char *glob, const char *path)
{
    const char *base;

    if (!path)
        return 0;
    base = strrchr(path, '/');
    return amp_glob(glob, strchr(glob, '/') || !base ? path : base + 1);
}

/* Three-valued evaluation: with count_known 0, tests of the call count
 * are unknown. */
static enum amp_truth
amp_eval(const struct amp_policy *p, int id, const struct amp_policy_call *c,
         int count_known)
{
    const struct amp_policy_node *n = &p->nodes[id];
    enum amp_truth l, r;
    int64_t v;

    switch (n->kind) {
    case AMP_NODE_AND:
        l = amp_eval(p, n->left, c, count_known);
        if (l == AMP_FALSE)
            return AMP_FALSE;
        r = amp_eval(p, n->right, c, count_known);
        return r == AMP_FALSE ? AMP_FALSE : l == AMP_TRUE ? r : AMP_UNKNOWN;
    case AMP_NODE_OR:
        l = amp_eval(p, n->left, c, count_known);
        if (l == AMP_TRUE)
            return AMP_TRUE;
        r = amp_eval(p, n->right, c, count_known);
        return r == AMP_TRUE ? AMP_TRUE : l == AMP_FALSE ? r : AMP_UNKNOWN;
    case AMP_NODE_NOT:
        l = amp_eval(p, n->left, c, count_known);
        return l == AMP_UNKNOWN ? AMP_UNKNOWN : (enum amp_truth)!l;
    case AMP_NODE_FAMILY:
        return (enum amp_truth)(c->family == (enum amp_family)n->value);
    case AMP_NODE_LT:
        return (enum amp_truth)(c->symbol &&
                                strncmp(c->symbol, "cublasLt", 8) == 0);
    case AMP_NODE_SYMBOL:
        return (enum amp_truth)amp_glob(p->strings + n->text, c->symbol);
    case AMP_NODE_CALLER:
        return (enum amp_truth)amp_glob_caller(p->strings + n->text, c);
    case AMP_NODE_MODULE:
        return (enum amp_truth)amp_glob_file(p->strings + n->text,
                                             c->module);
    default:
        break;
    }
    if (n->field == AMP_FIELD_CALL && !count_known)
        return AMP_UNKNOWN;
    if (!(c->present & (1u << n->field)))
        return AMP_FALSE;
    v = c->field[n->field];
    if (n->kind == AMP_NODE_DIVIDES)
        v %= n->modulus;
    return (enum amp_truth)amp_compare(v, n->op, n->value);
}

int
amp_policy_call_pedantic(const struct amp_policy_call *c)
{
    return (c->present & (1u << AMP_FIELD_MATH)) &&
           c->field[AMP_FIELD_MATH] == AMP_MATH_PEDANTIC;
}

/* A pedantic call is decided only by a rule that names `math`. */
enum amp_truth
amp_rule_eval(const struct amp_policy *p, int rule,
              const struct amp_policy_call *c, int count_known)
{
    const struct amp_policy_rule *r = &p->rules[rule];

    if (amp_policy_call_pedantic(c) && !(r->uses & (1u << AMP_FIELD_MATH)))
        return AMP_FALSE;
    return r->root < 0 ? AMP_TRUE : amp_eval(p, r->root, c, count_known);
}

/* What a call no rule matched takes: the default, or FP32 for a pedantic
 * call. */
int
amp_unmatched(const struct amp_policy *p, const struct amp_policy_call *c)
{
    return amp_policy_call_pedantic(c) ? AMP_POLICY_PEDANTIC : p->nrules;
}

/* Multiply-adds of a call, saturating; -1 when its fields are missing. */
static int64_t
amp_call_size(const struct amp_policy_call *c)
{
    static const enum amp_field gemm[] = {AMP_FIELD_M, AMP_FIELD_N,
                                          AMP_FIELD_K, AMP_FIELD_BATCH};
    static const enum amp_field conv[] = {
        AMP_FIELD_CONV_N, AMP_FIELD_CONV_C, AMP_FIELD_CONV_H,
        AMP_FIELD_CONV_W, AMP_FIELD_CONV_K, AMP_FIELD_CONV_R,
        AMP_FIELD_CONV_S};
    const enum amp_field *f = c->family == AMP_FAMILY_GEMM ? gemm : conv;
    size_t i, n = c->family == AMP_FAMILY_GEMM ? 4 : 7;
    double size = 1;

    for (i = 0; i < n; i++) {
        if (!(c->present & (1u << f[i])))
            return f[i] == AMP_FIELD_BATCH ? (int64_t)size : -1;
        size *= (double)c->field[f[i]];
    }
    if (c->family == AMP_FAMILY_CONV && (c->present & (1u << AMP_FIELD_GROUPS))
        && c->field[AMP_FIELD_GROUPS] > 0)
        size /= (double)c->field[AMP_FIELD_GROUPS];
    return size >= 9.2e18 ? INT64_MAX : (int64_t)size;
}

int
amp_policy_small(const struct amp_policy *p, const struct amp_policy_call *c)
{
    int64_t size;

    if (p->set.min_size <= 0)
        return 0;
    size = amp_call_size(c);
    return size >= 0 && size < p->set.min_size;
}

int
amp_policy_match(const struct amp_policy *p,
                 const struct amp_policy_call *call)
{
    int i;

    if (amp_policy_small(p, call))
        return AMP_POLICY_SMALL;
    for (i = 0; i < p->nrules; i++)
        if (amp_rule_eval(p, i, call, 1) == AMP_TRUE)
            return i;
    return amp_unmatched(p, call);
}
