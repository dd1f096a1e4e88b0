/* Unit tests of real-function resolution: RTLD_NEXT, then RTLD_NOLOAD. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/resolve.h"

#include <dlfcn.h>
#include <string.h>

static const char *fixture_path;

/* A function in the global scope (libc) is found through RTLD_NEXT. */
static void
test_global_symbol(void **state)
{
    assert_ptr_equal(amp_resolve("libc.so.6", "strlen"),
                     dlsym(RTLD_DEFAULT, "strlen"));
}

/* A library loaded in a local scope is invisible to RTLD_NEXT and found
 * through its soname; resolution never loads a library itself. */
static void
test_local_scope_library(void **state)
{
    const char *soname = "libamp_resolve_fixture.so";
    void *lib;
    int (*answer)(void);

    assert_null(amp_resolve(soname, "amp_resolve_fixture_answer"));
    assert_null(dlopen(soname, RTLD_NOW | RTLD_NOLOAD));

    lib = dlopen(fixture_path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    assert_null(dlsym(RTLD_DEFAULT, "amp_resolve_fixture_answer"));
    *(void **)&answer = amp_resolve(soname, "amp_resolve_fixture_answer");
    assert_non_null(answer);
    assert_int_equal(answer(), 42);
    dlclose(lib);
}

static void
test_missing_symbols_counted(void **state)
{
    void *a = (void *)1, *b = (void *)1;
    const char *const names[] = {"strlen", "amp_no_such_function"};
    void **const slots[] = {&a, &b};

    assert_int_equal(amp_resolve_all("libc.so.6", names, slots, 2), 1);
    assert_ptr_equal(a, dlsym(RTLD_DEFAULT, "strlen"));
    assert_null(b);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_global_symbol),
        cmocka_unit_test(test_local_scope_library),
        cmocka_unit_test(test_missing_symbols_counted),
    };

    if (argc < 2)
        return 2;
    fixture_path = argv[1];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
