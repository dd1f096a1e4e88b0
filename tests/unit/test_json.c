/* The JSON writer and parser: escaping, numbers, round trips, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes with fn into memory and returns the text (caller frees). */
static char *
written(void (*fn)(struct amp_json_out *j))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct amp_json_out j;

    assert_non_null(f);
    amp_json_init(&j, f, 0);
    fn(&j);
    fclose(f);
    return buf;
}

static void
write_strings(struct amp_json_out *j)
{
    amp_json_array(j);
    amp_json_string(j, "quote \" backslash \\ tab\t nl\n cr\r");
    amp_json_string(j, "\x01\x1f\x7f");
    amp_json_string(j, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    amp_json_string(j, "bad \xff\xc3 end");
    amp_json_string(j, NULL);
    amp_json_end_array(j);
}

static void
test_escaping(void **state)
{
    char *text = written(write_strings);
    struct amp_json *v;

    (void)state;
    assert_string_equal(text,
                        "[\"quote \\\" backslash \\\\ tab\\t nl\\n cr\\r\","
                        "\"\\u0001\\u001f\\u007f\","
                        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\","
                        "\"bad \\ufffd\\ufffd end\",null]");
    v = amp_json_parse(text, strlen(text), NULL, 0);
    assert_non_null(v);
    assert_int_equal(v->count, 5);
    assert_string_equal(v->items[0].string,
                        "quote \" backslash \\ tab\t nl\n cr\r");
    assert_string_equal(v->items[1].string, "\x01\x1f\x7f");
    assert_string_equal(v->items[2].string,
                        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    assert_string_equal(v->items[3].string, "bad \xef\xbf\xbd\xef\xbf\xbd end");
    assert_int_equal(v->items[4].type, AMP_JSON_NULL);
    amp_json_free(v);
    free(text);
}

static void
write_numbers(struct amp_json_out *j)
{
    amp_json_object(j);
    amp_json_knumber(j, "int", 12701050.0);
    amp_json_knumber(j, "frac", 0.1);
    amp_json_knumber(j, "tiny", 5.960464477539063e-08);
    amp_json_knumber(j, "nan", NAN);
    amp_json_knumber(j, "inf", -INFINITY);
    amp_json_kint(j, "neg", -42);
    amp_json_kbool(j, "yes", 1);
    amp_json_key(j, "empty");
    amp_json_object(j);
    amp_json_end_object(j);
    amp_json_end_object(j);
}

static void
test_numbers(void **state)
{
    char *text = written(write_numbers);
    struct amp_json *v;

    (void)state;
    assert_string_equal(text, "{\"int\":12701050,\"frac\":0.1,"
                              "\"tiny\":5.9604644775390625e-08,\"nan\":null,"
                              "\"inf\":null,\"neg\":-42,\"yes\":true,"
                              "\"empty\":{}}");
    v = amp_json_parse(text, strlen(text), NULL, 0);
    assert_non_null(v);
    assert_true(amp_json_num(amp_json_get(v, "frac"), 0) == 0.1);
    assert_true(amp_json_num(amp_json_get(v, "tiny"), 0) ==
                5.960464477539063e-08);
    assert_int_equal(amp_json_get(v, "nan")->type, AMP_JSON_NULL);
    assert_true(amp_json_num(amp_json_get(v, "neg"), 0) == -42.0);
    assert_int_equal(amp_json_get(v, "yes")->boolean, 1);
    assert_int_equal(amp_json_get(v, "empty")->count, 0);
    assert_null(amp_json_get(v, "missing"));
    amp_json_free(v);
    free(text);
}

static void
test_escapes_in(void **state)
{
    const char *text = "{\"s\": \"\\u00e9\\ud83d\\ude00\\/\\b\"}";
    struct amp_json *v = amp_json_parse(text, strlen(text), NULL, 0);

    (void)state;
    assert_non_null(v);
    assert_string_equal(amp_json_str(amp_json_get(v, "s")),
                        "\xc3\xa9\xf0\x9f\x98\x80/\b");
    amp_json_free(v);
}

static void
test_errors(void **state)
{
    static const struct {
        const char *text, *error;
    } bad[] = {
        {"", "line 1 column 1: unexpected end"},
        {"{\"a\": 1,}", "line 1 column 9: expected a key"},
        {"[1 2]", "line 1 column 4: expected ',' or ']'"},
        {"\"open", "line 1 column 6: unterminated string"},
        {"01", "line 1 column 2: text after the value"},
        {"{\"a\":\n tru}", "line 2 column 2: unexpected character"},
        {"\"\\ud800\"", "line 1 column 8: lone high surrogate"},
        {"\"a\tb\"", "line 1 column 3: control character in a string"},
        {"-", "line 1 column 1: bad number"},
        {"1.", "line 1 column 1: bad number"},
    };
    char err[128];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        assert_null(amp_json_parse(bad[i].text, strlen(bad[i].text), err,
                                   sizeof err));
        assert_string_equal(err, bad[i].error);
    }
}

static void
test_depth(void **state)
{
    char deep[200];
    char err[128];
    struct amp_json *v;

    (void)state;
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    assert_null(amp_json_parse(deep, sizeof deep, err, sizeof err));
    assert_non_null(strstr(err, "nested too deeply"));
    v = amp_json_parse(deep + 40, 120, err, sizeof err); /* 60 deep */
    assert_non_null(v);
    amp_json_free(v);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_escapes_in),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_depth),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
