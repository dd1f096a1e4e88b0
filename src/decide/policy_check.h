/* What `ampshim policy check` says about a valid policy: rules that can
 * never match, rules that an earlier rule shadows, a default that no call
 * reaches. Sufficient tests over conditions that are conjunctions (and,
 * not of one test); rules with `or` are reported as not analysed. */
#ifndef AMP_POLICY_CHECK_H
#define AMP_POLICY_CHECK_H

#include "decide/policy.h"

enum amp_finding_kind {
    AMP_FINDING_NEVER = 0,       /* the condition cannot hold */
    AMP_FINDING_SHADOWED,        /* every call it matches, rule `by` takes */
    AMP_FINDING_NOT_ANALYSED,    /* the condition has `or` */
    AMP_FINDING_DEFAULT_UNREACHED, /* rule `by` matches every call */
};

struct amp_policy_finding {
    enum amp_finding_kind kind;
    int rule;                    /* index in p->rules (nrules: the default) */
    int by;                      /* the earlier rule, -1: none */
};

/* Fills out (up to cap) in rule order; returns how many there are. */
int amp_policy_explain(const struct amp_policy *p,
                       struct amp_policy_finding *out, int cap);

#endif
