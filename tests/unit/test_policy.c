/* Unit tests of the policy language: every error message of the broken
 * corpus (tests/policy/, each file's first line "# expect: LINE:COL:
 * MESSAGE"), the bounds, the matcher, actions, the decision cache, the
 * check analysis, the shipped policies, and discovery over temporary XDG
 * directories.
 *
 * usage: test_policy POLICY_DIR CORPUS_FILE... */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "decide/policy.h"
#include "decide/policy_check.h"
#include "decide/site.h"
#include "decide/symbolize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *policy_dir;
static char **corpus;
static int ncorpus;
static struct amp_policy pol;
static struct amp_policy_error perr;

static char *
read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static enum amp_status
parse(const char *text)
{
    return amp_policy_parse(text, strlen(text), "t.policy", &pol, &perr);
}

static void
parse_ok(const char *text)
{
    if (parse(text) != AMP_OK)
        fail_msg("%s", perr.text);
}

/* ---- The broken corpus --------------------------------------------------- */

static void
test_corpus_messages(void **state)
{
    int i, wrong = 0;

    assert_true(ncorpus >= 30);
    for (i = 0; i < ncorpus; i++) {
        size_t len;
        char *text = read_all(corpus[i], &len), want[600];
        const char *expect = strstr(text, "# expect: ");
        const char *nl;

        assert_non_null(expect);
        nl = strchr(expect, '\n');
        snprintf(want, sizeof want, "%s:%.*s", corpus[i],
                 (int)(nl - expect - 10), expect + 10);
        assert_int_equal(amp_policy_load(corpus[i], &pol, &perr),
                         AMP_ERR_INVALID);
        if (strcmp(perr.text, want) != 0) {
            print_error("  got:  %s\n  want: %s\n", perr.text, want);
            wrong++;
        }
        free(text);
    }
    assert_int_equal(wrong, 0);
}

static void
test_unreadable_file(void **state)
{
    assert_int_equal(amp_policy_load("/nonexistent/x.policy", &pol, &perr),
                     AMP_ERR_INVALID);
    assert_string_equal(perr.text, "/nonexistent/x.policy: cannot "
                        "read: No such file or directory");
}

/* A file larger than the bounds allow is refused before it is parsed: the
 * one message the corpus cannot hold (2 MiB). */
static void
test_oversized_file(void **state)
{
    enum { CAP = (AMP_POLICY_MAX_LINE + 1) * 2048 };
    char path[] = "/tmp/ampshim-oversized-XXXXXX", want[200];
    static char text[CAP];
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    memset(text, '#', sizeof text);
    for (size_t i = 100; i < sizeof text; i += 100)
        text[i] = '\n';
    assert_int_equal(write(fd, text, sizeof text), (ssize_t)sizeof text);
    close(fd);
    assert_int_equal(amp_policy_load(path, &pol, &perr), AMP_ERR_INVALID);
    snprintf(want, sizeof want, "%s: expected at most %d bytes in a "
             "policy file", path, CAP - 1);
    assert_string_equal(perr.text, want);
    unlink(path);
}

/* ---- Bounds ------------------------------------------------------------ */

static void
test_too_many_rules(void **state)
{
    char *text = malloc(300 * 32);
    size_t at = 0;
    int i;

    for (i = 0; i < AMP_POLICY_MAX_RULES + 1; i++)
        at += (size_t)sprintf(text + at, "rule fp16 when m == %d\n", i);
    sprintf(text + at, "default fp32\n");
    assert_int_equal(parse(text), AMP_ERR_INVALID);
    assert_int_equal(perr.line, AMP_POLICY_MAX_RULES + 1);
    assert_int_equal(perr.col, 1);
    assert_string_equal(perr.message, "too many rules: at most 256");
    free(text);
}

static void
test_nul_byte(void **state)
{
    static const char text[] = "default fp32\n# a\0b\n";

    assert_int_equal(amp_policy_parse(text, sizeof text - 1, "n.policy",
                                      &pol, &perr),
                     AMP_ERR_INVALID);
    assert_string_equal(perr.text, "n.policy:2:4: expected text, found a "
                        "NUL byte");
}

static void
test_depth_limit_exact(void **state)
{
    /* Eight levels are allowed, nine are not (tests/policy/too_deep). */
    parse_ok("rule fp16 when (((((((( gemm ))))))))\ndefault fp32\n");
    parse_ok("rule fp16 when not not not not not not not not gemm\n"
             "default fp32\n");
    assert_int_equal(parse("rule fp16 when not not not not not not not not "
                           "not gemm\ndefault fp32\n"),
                     AMP_ERR_INVALID);
    assert_int_equal(perr.col, 48);
}

/* ---- Parsing what is valid --------------------------------------------------- */

/* set tolerance X NORM: the norm's names and their aliases, any case. */
static void
test_tolerance_norm(void **state)
{
    static const struct {
        const char *text;
        enum amp_norm norm;
    } cases[] = {
        {"set tolerance 1e-6 fro\ndefault fp16\n", AMP_NORM_FRO},
        {"set tolerance 1e-6 Frobenius # c\ndefault fp16\n", AMP_NORM_FRO},
        {"set tolerance 1e-6 l2\ndefault fp16\n", AMP_NORM_FRO},
        {"set tolerance 1e-6 max\ndefault fp16\n", AMP_NORM_MAX},
        {"set tolerance 1e-6\ndefault fp16\n", AMP_NORM_MAX},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parse_ok(cases[i].text);
        assert_true(pol.set.tolerance == 1e-6);
        assert_int_equal(pol.set.tolerance_norm, cases[i].norm);
    }
}

/* The one comparison of an error with a tolerance (decide/site.h). */
static void
test_error_over(void **state)
{
    struct amp_gemm_error e = {.max_abs = 0.5, .max_rel = 3e-4,
                               .fro_rel = 2e-7};

    (void)state;
    assert_true(amp_error_in(&e, AMP_NORM_MAX) == 3e-4);
    assert_true(amp_error_in(&e, AMP_NORM_FRO) == 2e-7);
    assert_int_equal(amp_error_over(&e, 5e-3, AMP_NORM_MAX), 0);
    assert_int_equal(amp_error_over(&e, 1e-4, AMP_NORM_MAX), 1);
    assert_int_equal(amp_error_over(&e, 1e-6, AMP_NORM_FRO), 0);
    assert_int_equal(amp_error_over(&e, 1e-6, AMP_NORM_MAX), 1);
    assert_int_equal(amp_error_over(&e, 1e-7, AMP_NORM_FRO), 1);
    /* Equal is within; no tolerance (HUGE_VAL) is never over... */
    assert_int_equal(amp_error_over(&e, 2e-7, AMP_NORM_FRO), 0);
    assert_int_equal(amp_error_over(&e, HUGE_VAL, AMP_NORM_MAX), 0);
    /* ...but a NaN error or a non-finite element always is. */
    e.fro_rel = NAN;
    assert_int_equal(amp_error_over(&e, HUGE_VAL, AMP_NORM_FRO), 1);
    assert_int_equal(amp_error_over(&e, 1.0, AMP_NORM_MAX), 0);
    e.nonfinite = 1;
    assert_int_equal(amp_error_over(&e, 1.0, AMP_NORM_MAX), 1);
}

static void
test_settings_and_matches(void **state)
{
    parse_ok("# c\nmatch exe \"train*\" build-id 0aFF\nmatch exe /opt/*/x\n"
             "set tolerance 2.5e-3   # t\nset shadow-rate 0.25\n"
             "set min-size 4K\nset scratch-max 3M\n\ndefault fp16\n");
    assert_int_equal(pol.nmatches, 2);
    assert_string_equal(pol.strings + pol.matches[0].exe, "train*");
    assert_int_equal(pol.matches[0].build_id_len, 2);
    assert_int_equal(pol.matches[0].build_id[0], 0x0a);
    assert_int_equal(pol.matches[0].build_id[1], 0xff);
    assert_string_equal(pol.strings + pol.matches[1].exe, "/opt/*/x");
    assert_true(pol.set.tolerance == 2.5e-3);
    assert_int_equal(pol.set.tolerance_norm, AMP_NORM_MAX);
    assert_true(pol.set.shadow_rate == 0.25);
    assert_int_equal(pol.set.min_size, 4096);
    assert_int_equal(pol.set.scratch_max, 3 << 20);
    assert_int_equal(pol.fallback.mode, AMP_MODE_FP16);
    assert_int_equal(pol.default_line, 9);
    assert_int_equal(pol.nrules, 0);
    assert_int_equal(pol.set.library_calls, 0);

    /* The calls NVIDIA's libraries make: FP32 unless a file opts in. */
    parse_ok("set library-calls convert\ndefault fp16\n");
    assert_int_equal(pol.set.library_calls, 1);
    parse_ok("set library-calls convert\nset library-calls fp32\n"
             "default fp16\n");
    assert_int_equal(pol.set.library_calls, 0);
}

static void
test_actions(void **state)
{
    parse_ok("rule shadow:bf16 when gemm\nrule tf32 verify 7\n"
             "rule allow-conversion when conv\nrule shadow\n"
             "default fp16x3\n");
    assert_int_equal(pol.nrules, 4);
    assert_int_equal(pol.rules[0].action.mode, AMP_MODE_SHADOW);
    assert_int_equal(pol.rules[0].action.candidate, AMP_MODE_BF16);
    assert_int_equal(pol.rules[1].action.mode, AMP_MODE_TF32);
    assert_int_equal(pol.rules[1].action.verify, 7);
    assert_int_equal(pol.rules[1].root, -1);
    assert_int_equal(pol.rules[2].action.mode, AMP_MODE_ALLOW_CONVERSION);
    assert_int_equal(pol.rules[3].action.candidate, AMP_MODE_FP16);
    assert_int_equal(pol.fallback.mode, AMP_MODE_FP16X3);
    parse_ok("rule tf32x3 verify 2 when gemm\nrule shadow:tf32x3\n"
             "default fp32\n");
    assert_int_equal(pol.nrules, 2);
    assert_int_equal(pol.rules[0].action.mode, AMP_MODE_TF32X3);
    assert_int_equal(pol.rules[0].action.verify, 2);
    assert_int_equal(pol.rules[1].action.mode, AMP_MODE_SHADOW);
    assert_int_equal(pol.rules[1].action.candidate, AMP_MODE_TF32X3);
}

/* ---- Matching ------------------------------------------------------------ */

static struct amp_policy_call
gemm_call(int64_t m, int64_t n, int64_t k, int transa, int transb)
{
    struct amp_policy_call c = {.family = AMP_FAMILY_GEMM,
                                .symbol = "cublasSgemm_v2"};

    amp_policy_call_set(&c, AMP_FIELD_M, m);
    amp_policy_call_set(&c, AMP_FIELD_N, n);
    amp_policy_call_set(&c, AMP_FIELD_K, k);
    amp_policy_call_set(&c, AMP_FIELD_BATCH, 1);
    amp_policy_call_set(&c, AMP_FIELD_TRANSA, transa);
    amp_policy_call_set(&c, AMP_FIELD_TRANSB, transb);
    return c;
}

static struct amp_policy_call
conv_call(int64_t c_in, int64_t k_out, int layout)
{
    struct amp_policy_call c = {.family = AMP_FAMILY_CONV,
                                .symbol = "cudnnConvolutionForward"};

    amp_policy_call_set(&c, AMP_FIELD_CONV_N, 8);
    amp_policy_call_set(&c, AMP_FIELD_CONV_C, c_in);
    amp_policy_call_set(&c, AMP_FIELD_CONV_H, 32);
    amp_policy_call_set(&c, AMP_FIELD_CONV_W, 32);
    amp_policy_call_set(&c, AMP_FIELD_CONV_K, k_out);
    amp_policy_call_set(&c, AMP_FIELD_CONV_R, 3);
    amp_policy_call_set(&c, AMP_FIELD_CONV_S, 3);
    amp_policy_call_set(&c, AMP_FIELD_GROUPS, 1);
    amp_policy_call_set(&c, AMP_FIELD_LAYOUT, layout);
    return c;
}

static void
test_match_shapes_and_order(void **state)
{
    struct amp_policy_call c;

    parse_ok("rule fp32 when m < 64 or n < 64\n"                  /* 0 */
             "rule bf16 when gemm and k % 8 != 0\n"               /* 1 */
             "rule tf32 when transa == t and not transb == t\n"   /* 2 */
             "rule fp16 when gemm and (k >= 4096 or batch > 1)\n" /* 3 */
             "rule allow-conversion when conv and C % 8 == 0 and "
             "layout == nhwc\n"                                   /* 4 */
             "rule fp16x3 when K > 64\n"                          /* 5 */
             "default shadow\n");
    c = gemm_call(32, 128, 64, 0, 0);
    assert_int_equal(amp_policy_match(&pol, &c), 0);
    c = gemm_call(128, 128, 63, 0, 0);
    assert_int_equal(amp_policy_match(&pol, &c), 1);
    c = gemm_call(128, 128, 64, 1, 0);
    assert_int_equal(amp_policy_match(&pol, &c), 2);
    c = gemm_call(128, 128, 64, 1, 1);
    assert_int_equal(amp_policy_match(&pol, &c), pol.nrules);
    c = gemm_call(128, 128, 4096, 1, 1);
    assert_int_equal(amp_policy_match(&pol, &c), 3);
    /* A GEMM field in a convolution is false: rule 0 does not match. */
    c = conv_call(16, 32, AMP_LAYOUT_NHWC);
    assert_int_equal(amp_policy_match(&pol, &c), 4);
    c = conv_call(16, 128, AMP_LAYOUT_NCHW);
    assert_int_equal(amp_policy_match(&pol, &c), 5);
    c = conv_call(12, 32, AMP_LAYOUT_NHWC);
    assert_int_equal(amp_policy_match(&pol, &c), pol.nrules);
}

/* A call whose program asked for pedantic or FMA math is decided only by
 * a rule whose condition names `math`: other rules and the default leave
 * it FP32 (AMP_POLICY_PEDANTIC, reason pedantic), with or without the
 * decision cache; a call that did not ask is matched as before. */
static void
test_match_pedantic(void **state)
{
    static struct amp_policy_cache cache;
    void *storage = malloc(amp_policy_cache_bytes());
    struct amp_policy_call c;
    struct amp_decision dec;
    static const int site;
    int pedantic;

    parse_ok("rule fp16 when gemm and m >= 64\n"                       /* 0 */
             "rule tf32x3 when gemm and math == pedantic and k >= 1024\n" /* 1 */
             "rule auto when conv and not math == default\n"          /* 2 */
             "default bf16\n");
    assert_non_null(storage);
    amp_policy_cache_init(&cache, &pol, storage);
    for (pedantic = 0; pedantic < 2; pedantic++) {
        int math = pedantic ? AMP_MATH_PEDANTIC : AMP_MATH_DEFAULT;

        c = gemm_call(128, 128, 128, 0, 0);
        c.site = &site;
        amp_policy_call_set(&c, AMP_FIELD_MATH, math);
        assert_int_equal(amp_policy_call_pedantic(&c), pedantic);
        assert_int_equal(amp_policy_match(&pol, &c),
                         pedantic ? AMP_POLICY_PEDANTIC : 0);
        assert_int_equal(amp_policy_cached_match(&cache, &c),
                         pedantic ? AMP_POLICY_PEDANTIC : 0);
        c = gemm_call(32, 128, 1024, 0, 0);
        amp_policy_call_set(&c, AMP_FIELD_MATH, math);
        assert_int_equal(amp_policy_match(&pol, &c), pedantic ? 1 : pol.nrules);
        c = conv_call(16, 32, AMP_LAYOUT_NHWC);
        amp_policy_call_set(&c, AMP_FIELD_MATH, math);
        assert_int_equal(amp_policy_match(&pol, &c), pedantic ? 2 : pol.nrules);
    }
    amp_policy_action(&pol, AMP_POLICY_PEDANTIC, 1, &dec);
    assert_int_equal(dec.mode, AMP_MODE_FP32);
    assert_int_equal(dec.why, AMP_WHY_PEDANTIC);
    assert_string_equal(amp_decision_why_name(dec.why),
                        "pedantic math, no rule names math");
    /* A call without the field (a caller that does not say) is not
     * pedantic. */
    c = gemm_call(128, 128, 128, 0, 0);
    assert_int_equal(amp_policy_match(&pol, &c), 0);
    /* math takes its two words alone. */
    assert_int_not_equal(parse("rule fp16 when math == strict\n"
                               "default fp32\n"), AMP_OK);
    assert_non_null(strstr(perr.text, "default or pedantic"));
    free(storage);
}

static void
test_match_symbol_caller_module(void **state)
{
    struct amp_policy_call c = gemm_call(128, 128, 128, 0, 0);

    parse_ok("rule fp32 when caller \"loss_*\"\n"
             "rule bf16 when module libattn*.so and symbol cublasSgemm*\n"
             "rule tf32 when module \"/opt/*/bin/*\"\n"
             "rule fp16x3 when caller 0x1*\n"
             "default fp16\n");
    assert_int_equal(pol.uses_site, 1);
    /* Unknown caller and module: those tests are false. */
    assert_int_equal(amp_policy_match(&pol, &c), pol.nrules);
    c.caller = "loss_forward";
    c.module = "/usr/lib/libattn_x.so";
    assert_int_equal(amp_policy_match(&pol, &c), 0);
    c.caller = "attention";
    assert_int_equal(amp_policy_match(&pol, &c), 1);
    c.symbol = "cublasGemmEx";
    assert_int_equal(amp_policy_match(&pol, &c), pol.nrules);
    c.module = "/opt/app/bin/trainer";
    assert_int_equal(amp_policy_match(&pol, &c), 2);
    c.module = "/usr/bin/stripped";
    c.caller = "0x1a2b";
    assert_int_equal(amp_policy_match(&pol, &c), 3);
}

/* A caller glob matches the function as users know it (demangled, no
 * compiler suffixes), the raw symbol, and the symbol without suffixes;
 * quoted globs hold a C++ name's "::", "()", "<>", ", " and "#". */
static void
test_match_demangled_caller(void **state)
{
    struct amp_policy_call c = gemm_call(128, 128, 128, 0, 0);
    static const char *const rules[] = {
        "rule fp16 when caller \"app::step(int)\"\ndefault fp32\n",
        "rule fp16 when caller _ZN3app4stepEi\ndefault fp32\n",
        "rule fp16 when caller _ZN3app4stepEi.isra.0\ndefault fp32\n",
        "rule fp16 when caller \"app::*\"\ndefault fp32\n",
    };
    size_t i;

    c.caller = "app::step(int)";
    c.caller_symbol = "_ZN3app4stepEi.isra.0";
    c.caller_symbol_base = amp_symbol_base(c.caller_symbol);
    for (i = 0; i < sizeof rules / sizeof *rules; i++) {
        parse_ok(rules[i]);
        assert_int_equal(amp_policy_match(&pol, &c), 0);
    }
    /* Neither a suffix alone nor another function matches. */
    parse_ok("rule fp16 when caller \"*.isra.1\" or caller \"app::step()\" "
             "or caller _ZN3app4stepEi.isra\ndefault fp32\n");
    assert_int_equal(amp_policy_match(&pol, &c), pol.nrules);

    parse_ok("rule bf16 when caller \"model::Pair<float, int>::run() "
             "const\"\n"
             "rule tf32 when caller \"{lambda(int)#1}*\"\n"
             "default fp32\n");
    c.caller = "model::Pair<float, int>::run() const";
    c.caller_symbol = "_ZNK5model4PairIfiE3runEv.constprop.0.isra.0";
    c.caller_symbol_base = amp_symbol_base(c.caller_symbol);
    assert_int_equal(amp_policy_match(&pol, &c), 0);
    c.caller = "{lambda(int)#1}::operator()(int) const";
    c.caller_symbol = NULL;
    assert_int_equal(amp_policy_match(&pol, &c), 1);
}

static void
test_min_size(void **state)
{
    struct amp_policy_call c = gemm_call(64, 64, 64, 0, 0);
    struct amp_decision d;

    parse_ok("set min-size 262145\ndefault fp16\n");
    assert_int_equal(amp_policy_match(&pol, &c), AMP_POLICY_SMALL);
    amp_policy_action(&pol, AMP_POLICY_SMALL, 1, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_equal(d.why, AMP_WHY_MIN_SIZE);
    amp_policy_call_set(&c, AMP_FIELD_BATCH, 2);
    assert_int_equal(amp_policy_match(&pol, &c), 0);
    c = conv_call(16, 16, AMP_LAYOUT_NCHW); /* 8*16*32*32*16*9 */
    assert_int_equal(amp_policy_match(&pol, &c), 0);
    /* Exactly min-size multiply-adds is not under it. */
    parse_ok("set min-size 262144\ndefault fp16\n");
    c = gemm_call(64, 64, 64, 0, 0);
    assert_int_equal(amp_policy_match(&pol, &c), 0);
    c = gemm_call(64, 64, 63, 0, 0);
    assert_int_equal(amp_policy_match(&pol, &c), AMP_POLICY_SMALL);
}

static void
test_action_verify_and_sampling(void **state)
{
    struct amp_decision d;

    parse_ok("set shadow-rate 0.25\nrule bf16 verify 2 when gemm\n"
             "default fp32\n");
    amp_policy_action(&pol, 0, 1, &d);
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, AMP_MODE_BF16);
    assert_int_equal(d.why, AMP_WHY_VERIFY);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.fp32_first, 0); /* the orders take turns */
    amp_policy_action(&pol, 0, 2, &d);
    assert_int_equal(d.why, AMP_WHY_VERIFY);
    assert_int_equal(d.fp32_first, 1);
    amp_policy_action(&pol, 0, 3, &d);
    assert_int_equal(d.mode, AMP_MODE_BF16);
    assert_int_equal(d.why, AMP_WHY_RULE);
    amp_policy_action(&pol, 0, 4, &d); /* every 4th: a sample */
    assert_int_equal(d.mode, AMP_MODE_SHADOW);
    assert_int_equal(d.candidate, AMP_MODE_BF16);
    assert_int_equal(d.why, AMP_WHY_SAMPLE);
    assert_int_equal(d.fp32_first, 0); /* the first sample */
    amp_policy_action(&pol, 0, 8, &d);
    assert_int_equal(d.why, AMP_WHY_SAMPLE);
    assert_int_equal(d.fp32_first, 1);
    amp_policy_action(&pol, 1, 4, &d); /* the default: fp32, no sample */
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_equal(d.why, AMP_WHY_DEFAULT);
    assert_int_equal(d.line, 3);
}

/* ---- The decision cache -------------------------------------------------- */

static void
test_cache_hits_and_counts(void **state)
{
    static struct amp_policy_cache cache;
    void *storage = malloc(amp_policy_cache_bytes());
    struct amp_policy_call c = gemm_call(128, 128, 128, 0, 0);
    static const int site_a, site_b;
    int64_t i;

    parse_ok("rule shadow when call <= 2\n"
             "rule fp32 when call % 3 == 0 and m == 128\n"
             "rule tf32 when m >= 256\n"
             "default fp16\n");
    amp_policy_cache_init(&cache, &pol, storage);
    c.site = &site_a;
    for (i = 1; i <= 7; i++) {
        int want = i <= 2 ? 0 : i % 3 == 0 ? 1 : pol.nrules;

        amp_policy_call_set(&c, AMP_FIELD_CALL, i);
        assert_int_equal(amp_policy_cached_match(&cache, &c), want);
        assert_int_equal(amp_policy_match(&pol, &c), want);
    }
    assert_int_equal(atomic_load(&cache.misses), 1);
    assert_int_equal(atomic_load(&cache.hits), 6);
    /* Another site, another shape: new keys. */
    c.site = &site_b;
    amp_policy_call_set(&c, AMP_FIELD_CALL, 5);
    assert_int_equal(amp_policy_cached_match(&cache, &c), pol.nrules);
    c = gemm_call(256, 128, 128, 0, 0);
    c.site = &site_b;
    amp_policy_call_set(&c, AMP_FIELD_CALL, 4);
    assert_int_equal(amp_policy_cached_match(&cache, &c), 2);
    assert_int_equal(amp_policy_cached_match(&cache, &c), 2);
    assert_int_equal(atomic_load(&cache.misses), 3);
    assert_int_equal(atomic_load(&cache.hits), 7);
    free(storage);
}

static void
test_cache_full_still_decides(void **state)
{
    static struct amp_policy_cache cache;
    void *storage = malloc(amp_policy_cache_bytes());
    int64_t m;

    parse_ok("rule bf16 when m % 2 == 1\ndefault fp16\n");
    amp_policy_cache_init(&cache, &pol, storage);
    for (m = 1; m <= AMP_POLICY_CACHE_SIZE + 10; m++) {
        struct amp_policy_call c = gemm_call(m, 8, 8, 0, 0);

        assert_int_equal(amp_policy_cached_match(&cache, &c),
                         m % 2 == 1 ? 0 : 1);
    }
    free(storage);
}

/* Rules that overlap: the first that matches decides, through the
 * matcher, the cache's first lookup (a miss) and its later ones (hits),
 * for static rules, for a count-dependent rule before a static one, and
 * for a key that only the later rules match. */
static void
test_overlapping_rules_first_wins(void **state)
{
    static struct amp_policy_cache cache;
    void *storage = malloc(amp_policy_cache_bytes());
    static const int site_a, site_b, site_c;
    struct amp_policy_call c;
    struct amp_decision d;
    int64_t i;

    parse_ok("rule bf16 when gemm and m >= 256\n"          /* 0 */
             "rule fp32 when call % 2 == 0 and m >= 64\n"  /* 1 */
             "rule tf32 when gemm and m >= 64\n"           /* 2 */
             "rule fp16 when gemm\n"                       /* 3 */
             "default fp32\n");
    amp_policy_cache_init(&cache, &pol, storage);
    /* m 512: rules 0, 2 and 3 match whatever the count; 0 decides. */
    c = gemm_call(512, 64, 64, 0, 0);
    c.site = &site_a;
    for (i = 1; i <= 4; i++) {
        amp_policy_call_set(&c, AMP_FIELD_CALL, i);
        assert_int_equal(amp_policy_match(&pol, &c), 0);
        assert_int_equal(amp_policy_cached_match(&cache, &c), 0);
    }
    amp_policy_action(&pol, amp_policy_cached_match(&cache, &c), 4, &d);
    assert_int_equal(d.mode, AMP_MODE_BF16);
    assert_int_equal(d.line, 1);
    /* m 128: rule 1 on even calls, else rule 2 (before rule 3). */
    c = gemm_call(128, 64, 64, 0, 0);
    c.site = &site_b;
    for (i = 1; i <= 4; i++) {
        int want = i % 2 == 0 ? 1 : 2;

        amp_policy_call_set(&c, AMP_FIELD_CALL, i);
        assert_int_equal(amp_policy_match(&pol, &c), want);
        assert_int_equal(amp_policy_cached_match(&cache, &c), want);
    }
    /* m 32: rule 3 alone, then the default for a convolution. */
    c = gemm_call(32, 64, 64, 0, 0);
    c.site = &site_c;
    amp_policy_call_set(&c, AMP_FIELD_CALL, 1);
    assert_int_equal(amp_policy_cached_match(&cache, &c), 3);
    assert_int_equal(amp_policy_cached_match(&cache, &c), 3);
    c = conv_call(16, 32, AMP_LAYOUT_NCHW);
    assert_int_equal(amp_policy_cached_match(&cache, &c), pol.nrules);
    assert_int_equal(atomic_load(&cache.misses), 4);
    free(storage);
}

/* ---- check's analysis ----------------------------------------------------- */

static void
test_explain(void **state)
{
    struct amp_policy_finding f[8];

    parse_ok("rule fp16 when gemm and m >= 64 and k % 8 == 0\n"   /* 0 */
             "rule bf16 when gemm and m >= 128 and k % 16 == 0\n" /* 1 */
             "rule tf32 when m > 10 and m < 5\n"                  /* 2 */
             "rule tf32 when gemm and C > 3\n"                    /* 3 */
             "rule fp16 when m >= 64 and k % 8 == 3\n"            /* 4 */
             "rule bf16 when conv or m > 1\n"                     /* 5 */
             "rule fp32\n"                                        /* 6 */
             "rule fp16 when conv\n"                              /* 7 */
             "default fp32\n");
    assert_int_equal(amp_policy_explain(&pol, f, 8), 6);
    assert_int_equal(f[0].kind, AMP_FINDING_SHADOWED);
    assert_int_equal(f[0].rule, 1);
    assert_int_equal(f[0].by, 0);
    assert_int_equal(f[1].kind, AMP_FINDING_NEVER);
    assert_int_equal(f[1].rule, 2);
    assert_int_equal(f[2].kind, AMP_FINDING_NEVER);
    assert_int_equal(f[2].rule, 3);
    assert_int_equal(f[3].kind, AMP_FINDING_NOT_ANALYSED);
    assert_int_equal(f[3].rule, 5);
    assert_int_equal(f[4].kind, AMP_FINDING_SHADOWED);
    assert_int_equal(f[4].rule, 7);
    assert_int_equal(f[4].by, 6);
    assert_int_equal(f[5].kind, AMP_FINDING_DEFAULT_UNREACHED);
    assert_int_equal(f[5].by, 6);
}

/* ---- The shipped policies -------------------------------------------------- */

static void
test_builtin_default(void **state)
{
    size_t len;
    const char *text = amp_policy_builtin(&len);
    struct amp_policy_call c = gemm_call(1024, 512, 1024, 0, 1);
    struct amp_decision d;

    assert_int_equal(amp_policy_parse(text, len, "<built-in>", &pol, &perr),
                     AMP_OK);
    assert_true(pol.set.tolerance > 0 && pol.set.tolerance <= 1e-2);
    assert_int_equal(pol.nmatches, 0);
    /* auto: the site chooses the mode (decide/auto.h). */
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 1, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    /* Every GEMM of at least 512M multiply-adds goes to auto, whatever
     * its dimensions: a short k (2048x2048x256, which tf32 speeds up), a
     * skinny m, dimensions that are not multiples of 8 (auto then
     * measures tf32 alone: test_auto's test_unaligned_shapes). */
    c = gemm_call(2048, 2048, 256, 0, 0);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    c = gemm_call(48, 4096, 4096, 0, 0);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    c = gemm_call(1000, 1000, 1000, 0, 1);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    /* Under 512M multiply-adds (policy/README.md): FP32, the rules not
     * asked. 1024x512x1020 is 535M, 512x256x1024 134M. */
    c = gemm_call(1024, 512, 1020, 0, 1);
    assert_int_equal(amp_policy_match(&pol, &c), AMP_POLICY_SMALL);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    c = gemm_call(512, 256, 1024, 0, 1);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_not_equal(d.why, AMP_WHY_AUTO);
    /* Convolutions likewise: 8 images of 128 channels in and out at
     * 32x32, 3x3, are 1.2G multiply-adds; of 64 channels 302M (FP32),
     * and 64 images of them 2.4G. */
    c = conv_call(128, 128, AMP_LAYOUT_NCHW);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    c = conv_call(64, 64, AMP_LAYOUT_NCHW);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_not_equal(d.why, AMP_WHY_AUTO);
    amp_policy_call_set(&c, AMP_FIELD_CONV_N, 64);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    /* Few input or output channels, or channels not multiples of 8, are
     * auto's to measure (it rules out what does not fit); small ones stay
     * FP32. */
    c = conv_call(3, 64, AMP_LAYOUT_NCHW);
    amp_policy_call_set(&c, AMP_FIELD_CONV_N, 4096);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    c = conv_call(128, 36, AMP_LAYOUT_NHWC);
    amp_policy_call_set(&c, AMP_FIELD_CONV_N, 4096);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.why, AMP_WHY_AUTO);
    c = conv_call(3, 64, AMP_LAYOUT_NCHW);
    amp_policy_action(&pol, amp_policy_match(&pol, &c), 3, &d);
    assert_int_equal(d.mode, AMP_MODE_FP32);
    assert_int_not_equal(d.why, AMP_WHY_AUTO);
}

static void
test_shipped_files_parse(void **state)
{
    static const char *const files[] = {"default.policy",
                                        "examples/trainer.policy",
                                        "examples/inference.policy"};
    char path[4096];
    size_t i;

    for (i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(path, sizeof path, "%s/%s", policy_dir, files[i]);
        if (amp_policy_load(path, &pol, &perr) != AMP_OK)
            fail_msg("%s", perr.text);
        assert_true(pol.nrules >= 2);
    }
}

/* ---- Discovery ---------------------------------------------------------- */

#define ENV_MAX 8
static const char *env_names[ENV_MAX], *env_values[ENV_MAX];
static int env_count;

static const char *
table_getenv(const char *name)
{
    int i;

    for (i = 0; i < env_count; i++)
        if (strcmp(env_names[i], name) == 0)
            return env_values[i];
    return NULL;
}

static void
env_set(const char *name, const char *value)
{
    env_names[env_count] = name;
    env_values[env_count++] = value;
}

static char tmp_root[256];

static void
write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void
make_dirs(const char *path)
{
    char buf[1024], *p;

    snprintf(buf, sizeof buf, "%s", path);
    for (p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0700);
            *p = '/';
        }
    }
    mkdir(buf, 0700);
}

static int
discovery_setup(void **state)
{
    char dir[1024];

    snprintf(tmp_root, sizeof tmp_root, "/tmp/amp_policy_XXXXXX");
    if (!mkdtemp(tmp_root))
        return -1;
    snprintf(dir, sizeof dir, "%s/user/ampshim/policies", tmp_root);
    make_dirs(dir);
    snprintf(dir, sizeof dir, "%s/sys1/ampshim/policies", tmp_root);
    make_dirs(dir);
    snprintf(dir, sizeof dir, "%s/sys2/ampshim/policies", tmp_root);
    make_dirs(dir);
    snprintf(dir, sizeof dir, "%s/home/.config/ampshim/policies", tmp_root);
    make_dirs(dir);
    return 0;
}

static int
discovery_teardown(void **state)
{
    char cmd[600];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    return system(cmd) == 0 ? 0 : -1;
}

static void
fake_program(struct amp_program *prog, const char *exe)
{
    memset(prog, 0, sizeof *prog);
    snprintf(prog->exe, sizeof prog->exe, "%s", exe);
    prog->name = strrchr(prog->exe, '/') + 1;
    prog->build_id_len = 4;
    memcpy(prog->build_id, "\xde\xad\xbe\xef", 4);
}

static void
test_find_order(void **state)
{
    char user[1024], sys1[1024], sys2[1024], dirs[2100], home[1024];
    char path[1100];
    struct amp_program prog;
    struct amp_policy_found found;

    fake_program(&prog, "/opt/app/bin/trainer");
    snprintf(user, sizeof user, "%s/user", tmp_root);
    snprintf(home, sizeof home, "%s/home", tmp_root);
    snprintf(sys1, sizeof sys1, "%s/sys1/ampshim/policies", tmp_root);
    snprintf(sys2, sizeof sys2, "%s/sys2/ampshim/policies", tmp_root);
    snprintf(dirs, sizeof dirs, "%s/sys1:relative/ignored:%s/sys2",
             tmp_root, tmp_root);
    write_file(sys2, "10-trainer.policy",
               "match exe trainer\ndefault bf16\n");
    env_count = 0;
    env_set("XDG_CONFIG_HOME", user);
    env_set("XDG_CONFIG_DIRS", dirs);
    amp_policy_find(table_getenv, &prog, &pol, &found);
    if (found.source != AMP_SOURCE_SYSTEM)
        fail_msg("%s", found.why);
    assert_false(found.broken);
    assert_int_equal(pol.fallback.mode, AMP_MODE_BF16);
    assert_non_null(strstr(found.path, "sys2/ampshim/policies/"
                                       "10-trainer.policy"));
    /* An earlier system directory wins; in it, name order, by match. */
    write_file(sys1, "20-any-trainer.policy",
               "match exe train*\ndefault tf32\n");
    write_file(sys1, "10-other.policy", "match exe other\ndefault fp16\n");
    write_file(sys1, "05-notes.txt", "not a policy\n");
    amp_policy_find(table_getenv, &prog, &pol, &found);
    assert_int_equal(pol.fallback.mode, AMP_MODE_TF32);
    assert_non_null(strstr(found.why, "20-any-trainer.policy"));
    /* The user directory comes first; HOME when XDG_CONFIG_HOME is unset. */
    write_file(strcat(strcpy(path, user), "/ampshim/policies"),
               "x.policy", "match exe /opt/*/trainer\ndefault fp16x3\n");
    amp_policy_find(table_getenv, &prog, &pol, &found);
    assert_int_equal(found.source, AMP_SOURCE_USER);
    assert_int_equal(pol.fallback.mode, AMP_MODE_FP16X3);
    env_names[0] = "HOME";
    env_values[0] = home;
    amp_policy_find(table_getenv, &prog, &pol, &found);
    assert_int_equal(found.source, AMP_SOURCE_SYSTEM);
    write_file(strcat(strcpy(path, home), "/.config/ampshim/policies"),
               "a.policy", "match build-id deadbeef\ndefault shadow\n");
    amp_policy_find(table_getenv, &prog, &pol, &found);
    assert_int_equal(found.source, AMP_SOURCE_USER);
    assert_int_equal(pol.fallback.mode, AMP_MODE_SHADOW);
    /* AMPSHIM_POLICY wins, whatever its match lines say. */
    snprintf(path, sizeof path, "%s/other.policy", tmp_root);
    write_file(tmp_root, "other.policy", "match exe nothing\ndefault bf16\n");
    env_set("AMPSHIM_POLICY", path);
    amp_policy_find(table_getenv, &prog, &pol, &found);
    assert_int_equal(found.source, AMP_SOURCE_ENV);
    assert_int_equal(pol.fallback.mode, AMP_MODE_BF16);
}

static void
test_find_broken_and_builtin(void **state)
{
    char dir[1024], sys[1024];
    struct amp_program prog;
    struct amp_policy_found found;

    fake_program(&prog, "/usr/bin/nomatch");
    env_count = 0;
    snprintf(sys, sizeof sys, "%s/sys2", tmp_root);
    env_set("XDG_CONFIG_DIRS", sys);
    env_set("HOME", "relative-home-is-ignored");
    amp_policy_find(table_getenv, &prog, &pol, &found);
    /* /etc/ampshim/policies is not expected on a test machine. */
    assert_int_equal(found.source, AMP_SOURCE_BUILTIN);
    assert_false(found.broken);
    assert_int_equal(pol.fallback.mode, AMP_MODE_FP32);
    assert_true(pol.nrules >= 2);
    assert_string_equal(pol.name, "<built-in>");
    /* A broken file whose match line accepts the program ends the
     * search: nothing is converted. */
    snprintf(dir, sizeof dir, "%s/sys2/ampshim/policies", tmp_root);
    write_file(dir, "00-broken.policy", "match exe nomatch\nrule fp8\n"
               "default fp32\n");
    amp_policy_find(table_getenv, &prog, &pol, &found);
    assert_true(found.broken);
    assert_int_equal(found.error.line, 2);
    assert_int_equal(found.error.col, 6);
    assert_int_equal(found.accept, AMP_ACCEPT_LINE);
    assert_int_equal(found.match_line, 1);
    assert_int_equal(found.nskipped, 0);
    assert_non_null(strstr(found.why, "00-broken.policy:2:6: expected an "
                                      "action"));
    assert_non_null(strstr(found.why, "; its match line 1 accepts "
                                      "nomatch"));
    snprintf(dir, sizeof dir, "%s/sys2/ampshim/policies/00-broken.policy",
             tmp_root);
    unlink(dir);
}

/* A broken file in a shared directory applies only to the programs its
 * match lines accept; others skip it, with a trail that says so. */
static void
test_find_broken_for_one_program(void **state)
{
    char dir[1024], sys[1024], broken[1100], all[1100], why[4000];
    struct amp_program a, b;
    struct amp_policy_found found;

    fake_program(&a, "/opt/app/bin/appA");
    fake_program(&b, "/opt/app/bin/appB");
    env_count = 0;
    snprintf(sys, sizeof sys, "%s/sys1", tmp_root);
    env_set("XDG_CONFIG_DIRS", sys);
    snprintf(dir, sizeof dir, "%s/sys1/ampshim/policies", tmp_root);
    snprintf(broken, sizeof broken, "%s/10-a.policy", dir);
    snprintf(all, sizeof all, "%s/20-all.policy", dir);
    write_file(dir, "05-other.policy", "match exe other\ndefault tf32\n");
    write_file(dir, "10-a.policy", "match exe appA\nrule fp61 when gemm\n"
               "default fp16\n");
    write_file(dir, "20-all.policy", "default bf16\n");

    amp_policy_find(table_getenv, &b, &pol, &found);
    assert_false(found.broken);
    assert_int_equal(found.source, AMP_SOURCE_SYSTEM);
    assert_string_equal(found.path, all);
    assert_int_equal(pol.fallback.mode, AMP_MODE_BF16);
    assert_int_equal(found.accept, AMP_ACCEPT_NO_MATCH_LINE);
    assert_int_equal(found.nskipped, 2);
    assert_int_equal(found.nskipped_broken, 1);
    assert_false(found.skipped[0].broken);
    assert_true(found.skipped[1].broken);
    assert_string_equal(found.skipped[1].path, broken);
    assert_int_equal(found.skipped[1].source, AMP_SOURCE_SYSTEM);
    assert_int_equal(found.skipped[1].error_line, 2);
    assert_int_equal(found.skipped[1].error_col, 6);
    assert_string_equal(found.skipped[1].error_message,
                        "unknown action 'fp61'; did you mean 'fp16'?");
    snprintf(why, sizeof why, "%s: the first policy in %s that applies to "
             "appB: it has no match line, so it applies to every program; "
             "skipped, with an error but not for appB: %s", all, dir,
             broken);
    assert_string_equal(found.why, why);

    amp_policy_find(table_getenv, &a, &pol, &found);
    assert_true(found.broken);
    assert_string_equal(found.path, broken);
    assert_int_equal(found.accept, AMP_ACCEPT_LINE);
    assert_int_equal(found.match_line, 1);
    assert_int_equal(found.nskipped, 1);
    snprintf(why, sizeof why, "%s has an error: nothing is converted "
             "(%s:2:6: unknown action 'fp61'; did you mean 'fp16'?); its "
             "match line 1 accepts appA", broken, broken);
    assert_string_equal(found.why, why);
}

/* A broken file whose match lines cannot be read, or that has none,
 * applies to every program. */
static void
test_find_broken_for_all(void **state)
{
    static const struct {
        const char *text;
        enum amp_policy_accept accept;
        int error_line, match_error_line;
    } cases[] = {
        /* the error is on a match line */
        {"match exe appA\nmatch exe\ndefault fp16\n",
         AMP_ACCEPT_UNREADABLE, 2, 2},
        /* an error before a broken match line */
        {"match exe appA\nset speed 2\nmatch build-id xy\ndefault fp16\n",
         AMP_ACCEPT_UNREADABLE, 2, 3},
        /* a match line after a rule */
        {"rule fp16\nmatch exe appA\ndefault fp16\n",
         AMP_ACCEPT_UNREADABLE, 2, 2},
        /* no match line */
        {"rule fp61\ndefault fp16\n", AMP_ACCEPT_NO_MATCH_LINE, 1, 0},
    };
    char dir[1024], sys[1024], path[1100];
    struct amp_program b;
    struct amp_policy_found found;
    size_t i;

    fake_program(&b, "/opt/app/bin/appB");
    env_count = 0;
    snprintf(sys, sizeof sys, "%s/sys1", tmp_root);
    env_set("XDG_CONFIG_DIRS", sys);
    snprintf(dir, sizeof dir, "%s/sys1/ampshim/policies", tmp_root);
    snprintf(path, sizeof path, "%s/10-a.policy", dir);
    write_file(dir, "20-all.policy", "default bf16\n");
    for (i = 0; i < sizeof cases / sizeof *cases; i++) {
        write_file(dir, "10-a.policy", cases[i].text);
        amp_policy_find(table_getenv, &b, &pol, &found);
        if (!found.broken || found.accept != cases[i].accept)
            fail_msg("case %zu: %s", i, found.why);
        assert_string_equal(found.path, path);
        assert_int_equal(found.error.line, cases[i].error_line);
        assert_int_equal(found.match_error.line, cases[i].match_error_line);
        assert_non_null(strstr(found.why, "so it applies to every "
                                          "program"));
    }
    /* An unreadable file, too. */
    write_file(dir, "10-a.policy", "default fp16\n");
    chmod(path, 0);
    if (access(path, R_OK) != 0) { /* not when the tests run as root */
        amp_policy_find(table_getenv, &b, &pol, &found);
        assert_true(found.broken);
        assert_int_equal(found.accept, AMP_ACCEPT_UNREADABLE);
        assert_int_equal(found.error.line, 0);
    }
    chmod(path, 0600);
}

/* The trail keeps the first AMP_POLICY_SKIPPED_MAX files, counts all. */
static void
test_find_trail_bound(void **state)
{
    char dir[1024], sys[1024], name[64];
    struct amp_program b;
    struct amp_policy_found found;
    int i;

    fake_program(&b, "/opt/app/bin/appB");
    env_count = 0;
    snprintf(sys, sizeof sys, "%s/sys1", tmp_root);
    env_set("XDG_CONFIG_DIRS", sys);
    snprintf(dir, sizeof dir, "%s/sys1/ampshim/policies", tmp_root);
    for (i = 0; i < AMP_POLICY_SKIPPED_MAX + 4; i++) {
        snprintf(name, sizeof name, "%02d.policy", i);
        write_file(dir, name, "match exe other\ndefault fp16\n");
    }
    amp_policy_find(table_getenv, &b, &pol, &found);
    assert_int_equal(found.source, AMP_SOURCE_BUILTIN);
    assert_int_equal(found.nskipped, AMP_POLICY_SKIPPED_MAX + 4);
    assert_int_equal(found.nskipped_broken, 0);
    assert_non_null(strstr(found.skipped[AMP_POLICY_SKIPPED_MAX - 1].path,
                           "/15.policy"));
}

/* Just the match lines of a file with errors elsewhere. */
static void
test_parse_matches(void **state)
{
    const char *text = "# for two programs\nmatch exe appA\nset speed 2\n"
                       "match build-id deadbeef exe \"app B\"\n"
                       "rule fp61 \"unclosed\n";

    assert_int_equal(parse(text), AMP_ERR_INVALID);
    assert_int_equal(amp_policy_parse_matches(text, strlen(text), "t.policy",
                                              &pol, &perr),
                     AMP_OK);
    assert_int_equal(pol.nmatches, 2);
    assert_int_equal(pol.matches[0].line, 2);
    assert_string_equal(pol.strings + pol.matches[0].exe, "appA");
    assert_int_equal(pol.matches[1].line, 4);
    assert_int_equal(pol.matches[1].build_id_len, 4);
    assert_string_equal(pol.strings + pol.matches[1].exe, "app B");
    text = "match exe a\nmatch exe\nrule fp16\ndefault fp16\n";
    assert_int_equal(amp_policy_parse_matches(text, strlen(text), "t.policy",
                                              &pol, &perr),
                     AMP_ERR_INVALID);
    assert_string_equal(perr.text, "t.policy:2:10: expected a glob of the "
                        "executable's name after 'exe', found end of line");
}

static void
test_program_self_build_id(void **state)
{
    struct amp_program self;
    unsigned char from_file[AMP_POLICY_BUILD_ID_MAX];
    size_t len = 0;

    amp_program_self(&self);
    assert_string_equal(self.name, "test_policy");
    assert_int_equal(amp_elf_build_id(self.exe, from_file, sizeof from_file,
                                      &len),
                     0);
    assert_true(len >= 8);
    assert_int_equal(self.build_id_len, len);
    assert_memory_equal(self.build_id, from_file, len);
    assert_int_equal(amp_elf_build_id("/nonexistent", from_file,
                                      sizeof from_file, &len),
                     -1);
}

static void
test_applies(void **state)
{
    struct amp_program prog;

    fake_program(&prog, "/opt/app/bin/trainer");
    parse_ok("default fp16\n");
    assert_true(amp_policy_applies(&pol, &prog));
    parse_ok("match exe trainer build-id deadbeef\ndefault fp16\n");
    assert_true(amp_policy_applies(&pol, &prog));
    parse_ok("match exe trainer build-id deadbeee\ndefault fp16\n");
    assert_false(amp_policy_applies(&pol, &prog));
    parse_ok("match exe infer\nmatch build-id DEADBEEF\ndefault fp16\n");
    assert_true(amp_policy_applies(&pol, &prog));
    parse_ok("match exe /opt/*/train?r\ndefault fp16\n");
    assert_true(amp_policy_applies(&pol, &prog));
    parse_ok("match exe /usr/*\ndefault fp16\n");
    assert_false(amp_policy_applies(&pol, &prog));
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_messages),
        cmocka_unit_test(test_oversized_file),
        cmocka_unit_test(test_unreadable_file),
        cmocka_unit_test(test_too_many_rules),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_depth_limit_exact),
        cmocka_unit_test(test_settings_and_matches),
        cmocka_unit_test(test_tolerance_norm),
        cmocka_unit_test(test_error_over),
        cmocka_unit_test(test_actions),
        cmocka_unit_test(test_match_shapes_and_order),
        cmocka_unit_test(test_match_pedantic),
        cmocka_unit_test(test_match_symbol_caller_module),
        cmocka_unit_test(test_match_demangled_caller),
        cmocka_unit_test(test_min_size),
        cmocka_unit_test(test_action_verify_and_sampling),
        cmocka_unit_test(test_cache_hits_and_counts),
        cmocka_unit_test(test_cache_full_still_decides),
        cmocka_unit_test(test_overlapping_rules_first_wins),
        cmocka_unit_test(test_explain),
        cmocka_unit_test(test_builtin_default),
        cmocka_unit_test(test_shipped_files_parse),
        cmocka_unit_test(test_applies),
        cmocka_unit_test(test_program_self_build_id),
        cmocka_unit_test_setup_teardown(test_find_order, discovery_setup,
                                        discovery_teardown),
        cmocka_unit_test_setup_teardown(test_find_broken_and_builtin,
                                        discovery_setup, discovery_teardown),
        cmocka_unit_test_setup_teardown(test_find_broken_for_one_program,
                                        discovery_setup, discovery_teardown),
        cmocka_unit_test_setup_teardown(test_find_broken_for_all,
                                        discovery_setup, discovery_teardown),
        cmocka_unit_test_setup_teardown(test_find_trail_bound,
                                        discovery_setup, discovery_teardown),
        cmocka_unit_test(test_parse_matches),
    };

    if (argc < 2) {
        fprintf(stderr, "usage: %s POLICY_DIR CORPUS_FILE...\n", argv[0]);
        return 2;
    }
    policy_dir = argv[1];
    corpus = argv + 2;
    ncorpus = argc - 2;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
