/* Matching a call against a policy's rules (policy_match.c), private to
 * the decision cache (policy_decision.c): the three-valued evaluation of
 * a rule, whose tests of the call count are unknown until the count is. */
#ifndef AMP_POLICY_MATCH_H
#define AMP_POLICY_MATCH_H

#include "decide/policy.h"

enum amp_truth {
    AMP_FALSE = 0,
    AMP_TRUE = 1,
    AMP_UNKNOWN = 2,             /* depends on the call count */
};

/* Rule `rule`'s truth for call c; with count_known 0, tests of the call
 * count are unknown. */
enum amp_truth amp_rule_eval(const struct amp_policy *p, int rule,
                             const struct amp_policy_call *c,
                             int count_known);
/* What a call no rule matched takes: the default, or FP32 for a pedantic
 * call. */
int amp_unmatched(const struct amp_policy *p, const struct amp_policy_call *c);
/* 1 when the call is under the policy's min-size. */
int amp_policy_small(const struct amp_policy *p,
                     const struct amp_policy_call *c);

#endif
