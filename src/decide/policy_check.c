/* `ampshim policy check`'s analysis: each rule's condition as a box (the
 * families, an interval per field, divisibility, globs) when it is a
 * conjunction of simple tests; an empty box never matches, and a box
 * inside an earlier rule's box is shadowed by it. */
#include "decide/policy_check.h"

#include <stdio.h>
#include <string.h>

#define AMP_BOX_EXTRA 16

struct amp_box_extra {
    uint8_t kind;                /* node kind: divides, !=, or a glob */
    uint8_t field, op;
    int64_t modulus, value;
    uint32_t text;
};

struct amp_box {
    int exact;                   /* the condition is this box, exactly */
    unsigned families;
    int64_t lo[AMP_FIELD_COUNT], hi[AMP_FIELD_COUNT];
    int nextra;
    struct amp_box_extra extra[AMP_BOX_EXTRA];
};

static const int amp_field_family[AMP_FIELD_COUNT] = {
    0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1};

static int
amp_negate(int op)
{
    static const int neg[] = {AMP_CMP_GE, AMP_CMP_GT, AMP_CMP_NE, AMP_CMP_EQ, AMP_CMP_LT, AMP_CMP_LE};

    return neg[op];
}

static void
amp_box_extra(struct amp_box *b, const struct amp_policy_node *n, int op)
{
    struct amp_box_extra *x;

    if (b->nextra == AMP_BOX_EXTRA) {
        b->exact = 0;
        return;
    }
    x = &b->extra[b->nextra++];
    x->kind = n->kind;
    x->field = n->field;
    x->op = (uint8_t)op;
    x->modulus = n->modulus;
    x->value = n->value;
    x->text = n->text;
}

static void
amp_box_leaf(struct amp_box *b, const struct amp_policy_node *n, int negated)
{
    int op = negated ? amp_negate(n->op) : n->op;
    int f = n->field;

    if (n->kind == AMP_NODE_FAMILY) {
        unsigned bit = 1u << n->value;

        b->families &= negated ? ~bit : bit;
        return;
    }
    if (n->kind == AMP_NODE_LT) {
        /* cuBLASLt's calls: some of the GEMMs, not a box of fields. */
        if (!negated)
            b->families &= 1u << AMP_FAMILY_GEMM;
        b->exact = 0;
        return;
    }
    if (n->kind == AMP_NODE_SYMBOL || n->kind == AMP_NODE_CALLER || n->kind == AMP_NODE_MODULE) {
        if (negated)
            b->exact = 0;
        else
            amp_box_extra(b, n, 0);
        return;
    }
    if (amp_field_family[f] >= 0)
        b->families &= 1u << amp_field_family[f];
    if (n->kind == AMP_NODE_DIVIDES || op == AMP_CMP_NE) {
        amp_box_extra(b, n, op);
        return;
    }
    if ((op == AMP_CMP_LT || op == AMP_CMP_LE || op == AMP_CMP_EQ) &&
        n->value - (op == AMP_CMP_LT) < b->hi[f])
        b->hi[f] = n->value - (op == AMP_CMP_LT);
    if ((op == AMP_CMP_GT || op == AMP_CMP_GE || op == AMP_CMP_EQ) &&
        n->value + (op == AMP_CMP_GT) > b->lo[f])
        b->lo[f] = n->value + (op == AMP_CMP_GT);
}

static void
amp_box_walk(const struct amp_policy *p, int id, struct amp_box *b)
{
    const struct amp_policy_node *n = &p->nodes[id];

    if (n->kind == AMP_NODE_AND) {
        amp_box_walk(p, n->left, b);
        amp_box_walk(p, n->right, b);
    } else if (n->kind == AMP_NODE_NOT && p->nodes[n->left].kind >= AMP_NODE_FAMILY) {
        amp_box_leaf(b, &p->nodes[n->left], 1);
    } else if (n->kind >= AMP_NODE_FAMILY) {
        amp_box_leaf(b, n, 0);
    } else {
        b->exact = 0; /* or, not of a group: not analysed */
    }
}

static void
amp_box_of(const struct amp_policy *p, int rule, struct amp_box *b)
{
    int f;

    memset(b, 0, sizeof *b);
    b->exact = 1;
    b->families = (1u << AMP_FAMILY_COUNT) - 1;
    for (f = 0; f < AMP_FIELD_COUNT; f++) {
        b->lo[f] = f == AMP_FIELD_CALL ? 1 : 0;
        b->hi[f] = f == AMP_FIELD_TRANSA || f == AMP_FIELD_TRANSB ||
                           f == AMP_FIELD_LAYOUT
                       ? 1
                   : f == AMP_FIELD_EPILOGUE ? AMP_EPI_COUNT - 1
                                              : INT64_MAX;
    }
    if (p->rules[rule].root >= 0)
        amp_box_walk(p, p->rules[rule].root, b);
}

/* 1 when no call can satisfy the box (a sufficient test). */
static int
amp_box_empty(const struct amp_box *b)
{
    int f, i;

    if (!b->families)
        return 1;
    for (f = 0; f < AMP_FIELD_COUNT; f++)
        if (b->lo[f] > b->hi[f])
            return 1;
    for (i = 0; i < b->nextra; i++) {
        const struct amp_box_extra *x = &b->extra[i];

        if (x->kind == AMP_NODE_DIVIDES && x->op == AMP_CMP_EQ && x->value >= x->modulus)
            return 1;
        if (b->lo[x->field] == b->hi[x->field] && x->kind != AMP_NODE_SYMBOL &&
            x->kind != AMP_NODE_CALLER && x->kind != AMP_NODE_MODULE) {
            int64_t v = b->lo[x->field];

            if (x->kind == AMP_NODE_DIVIDES)
                v %= x->modulus;
            if ((x->op == AMP_CMP_EQ) != (v == x->value))
                return 1;
        }
    }
    return 0;
}

/* 1 when b implies the extra constraint x of an earlier box. */
static int
amp_box_implies(const struct amp_box *b, const struct amp_box_extra *x)
{
    int i, f = x->field;

    if (x->kind == AMP_NODE_COMPARE) /* != value */
        return b->lo[f] > x->value || b->hi[f] < x->value ||
               (b->lo[f] == b->hi[f] && b->lo[f] != x->value);
    if (x->kind == AMP_NODE_DIVIDES && b->lo[f] == b->hi[f])
        return ((b->lo[f] % x->modulus) == x->value) == (x->op == AMP_CMP_EQ);
    for (i = 0; i < b->nextra; i++) {
        const struct amp_box_extra *y = &b->extra[i];

        if (y->kind != x->kind)
            continue;
        if (x->kind == AMP_NODE_DIVIDES) {
            if (y->field == f && y->op == AMP_CMP_EQ && x->op == AMP_CMP_EQ &&
                y->modulus % x->modulus == 0 &&
                y->value % x->modulus == x->value)
                return 1;
            if (y->field == f && y->op == x->op &&
                y->modulus == x->modulus && y->value == x->value)
                return 1;
        } else if (x->kind == AMP_NODE_COMPARE) {
            if (y->field == f && y->value == x->value)
                return 1;
        } else if (y->text == x->text) {
            return 1;
        }
    }
    return 0;
}

/* 1 when every call in b is in a. */
static int
amp_box_inside(const struct amp_box *b, const struct amp_box *a)
{
    int f, i;

    if (b->families & ~a->families)
        return 0;
    for (f = 0; f < AMP_FIELD_COUNT; f++)
        if (b->lo[f] < a->lo[f] || b->hi[f] > a->hi[f])
            return 0;
    for (i = 0; i < a->nextra; i++)
        if (!amp_box_implies(b, &a->extra[i]))
            return 0;
    return 1;
}

int
amp_policy_explain(const struct amp_policy *p,
                   struct amp_policy_finding *out, int cap)
{
    static struct amp_box boxes[AMP_POLICY_MAX_RULES];
    int i, j, n = 0;

    for (i = 0; i < p->nrules; i++) {
        struct amp_policy_finding f = {.rule = i, .by = -1};

        amp_box_of(p, i, &boxes[i]);
        if (boxes[i].exact && amp_box_empty(&boxes[i])) {
            f.kind = AMP_FINDING_NEVER;
        } else {
            for (j = 0; j < i; j++) {
                if (boxes[j].exact && !amp_box_empty(&boxes[j]) &&
                    amp_box_inside(&boxes[i], &boxes[j]))
                    break;
            }
            if (j == i && !boxes[i].exact)
                f.kind = AMP_FINDING_NOT_ANALYSED;
            else if (j == i)
                continue;
            else {
                f.kind = AMP_FINDING_SHADOWED;
                f.by = j;
            }
        }
        if (n < cap)
            out[n] = f;
        n++;
    }
    for (i = 0; i < p->nrules; i++) {
        if (boxes[i].exact && p->rules[i].root < 0) {
            struct amp_policy_finding f = {.kind = AMP_FINDING_DEFAULT_UNREACHED,
                                           .rule = p->nrules, .by = i};

            if (n < cap)
                out[n] = f;
            n++;
            break;
        }
    }
    return n;
}
