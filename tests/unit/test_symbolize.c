/* Symbolization of return addresses: a static function found in .symtab
 * of an unstripped library, module + offset in its stripped copy, the
 * main program, and an address in no module.
 *
 * usage: test_symbolize FIXTURE STRIPPED_FIXTURE */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "decide/symbolize.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef const void *(*amp_fixture_probe)(void);
typedef const void *(*amp_fixture_entry_fn)(amp_fixture_probe);

static const char *fixture_path, *stripped_path;

static __attribute__((noinline)) const void *
probe(void)
{
    return __builtin_return_address(0);
}

static const void *
call_fixture(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    amp_fixture_entry_fn entry;

    assert_non_null(lib);
    *(void **)&entry = dlsym(lib, "amp_fixture_entry");
    assert_non_null(entry);
    return entry(probe);
}

static void
test_static_function_and_stripped(void **state)
{
    struct amp_symbol full, bare;
    char buf[32], want[32];

    assert_int_equal(amp_symbolize(call_fixture(fixture_path), &full),
                     AMP_OK);
    assert_string_equal(full.function, "amp_fixture_static_site");
    assert_int_equal(full.from_symtab, 1);
    assert_true(full.function_offset > 0 && full.function_offset < 64);
    assert_string_equal(full.module, fixture_path);
    assert_string_equal(amp_symbol_caller(&full, buf, sizeof buf),
                        "amp_fixture_static_site");

    assert_int_equal(amp_symbolize(call_fixture(stripped_path), &bare),
                     AMP_OK);
    assert_string_equal(bare.function, "");
    assert_string_equal(bare.module, stripped_path);
    /* Stripping moves no code: the same offset in the module. */
    assert_int_equal(bare.offset, full.offset);
    snprintf(want, sizeof want, "0x%lx", (unsigned long)full.offset);
    assert_string_equal(amp_symbol_caller(&bare, buf, sizeof buf), want);
}

static void
test_main_program_and_nowhere(void **state)
{
    struct amp_symbol s;
    const char *slash;

    assert_int_equal(amp_symbolize((const void *)((uintptr_t)probe + 1), &s),
                     AMP_OK);
    assert_string_equal(s.function, "probe");
    slash = strrchr(s.module, '/');
    assert_non_null(slash);
    assert_string_equal(slash + 1, "test_symbolize");
    assert_int_equal(amp_symbolize((const void *)16, &s),
                     AMP_ERR_UNAVAILABLE);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_function_and_stripped),
        cmocka_unit_test(test_main_program_and_nowhere),
    };

    if (argc != 3)
        return 2;
    fixture_path = argv[1];
    stripped_path = argv[2];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
