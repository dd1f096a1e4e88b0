/* libFuzzer target: the policy parser on arbitrary bytes, whole and match
 * lines only, must return AMP_OK or AMP_ERR_INVALID with a message inside
 * the bounds, never crash, never read past the input (ASan). */
#include "decide/policy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct amp_policy p;
    struct amp_policy_error err;
    /* A copy of exactly size bytes: ASan sees any read past the end. */
    char *text = malloc(size ? size : 1);
    enum amp_status st;

    if (!text)
        return 0;
    memcpy(text, data, size);
    st = amp_policy_parse(text, size, "fuzz.policy", &p, &err);
    if (st != AMP_OK && (st != AMP_ERR_INVALID || err.line < 1 ||
                         err.message[0] == '\0'))
        abort();
    if (st == AMP_OK && (p.nrules > AMP_POLICY_MAX_RULES ||
                         p.nnodes > AMP_POLICY_MAX_NODES ||
                         p.default_line < 1))
        abort();
    /* The match lines alone, as the search reads a broken file's. */
    st = amp_policy_parse_matches(text, size, "fuzz.policy", &p, &err);
    if (st != AMP_OK && (st != AMP_ERR_INVALID || err.line < 1 ||
                         err.message[0] == '\0'))
        abort();
    if (st == AMP_OK && (p.nmatches > AMP_POLICY_MAX_MATCHES ||
                         p.nrules != 0))
        abort();
    free(text);
    return 0;
}
