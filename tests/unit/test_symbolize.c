/* Symbolization of return addresses: a static function found in .symtab
 * of an unstripped library, module + offset in its stripped copy, the
 * main program, a C++ name with a compiler suffix, and an address in no
 * module; the names users know (suffixes dropped, C++ demangled) and the
 * site label.
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

/* Named as gcc names a part of `fixture::Probe<int>::at(long) const` that
 * it split off. */
static const void *probe_part(void) __asm__("_ZNK7fixture5ProbeIiE2atEl.part.0");

static __attribute__((noinline, used)) const void *
probe_part(void)
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
    assert_string_equal(s.symbol, "probe");
    slash = strrchr(s.module, '/');
    assert_non_null(slash);
    assert_string_equal(slash + 1, "test_symbolize");
    assert_int_equal(amp_symbolize((const void *)16, &s),
                     AMP_ERR_UNAVAILABLE);
}

/* A C++ name with a suffix: the symbol as is, the function demangled
 * without it (this C program has no C++ runtime of its own: the
 * demangler is libstdc++.so.6's, loaded for it). */
static void
test_cxx_function(void **state)
{
    struct amp_symbol s;
    char buf[32];

    assert_int_equal(amp_symbolize((const void *)((uintptr_t)probe_part + 1),
                                   &s),
                     AMP_OK);
    assert_string_equal(s.symbol, "_ZNK7fixture5ProbeIiE2atEl.part.0");
    assert_string_equal(s.function, "fixture::Probe<int>::at(long) const");
    assert_string_equal(amp_symbol_caller(&s, buf, sizeof buf),
                        "fixture::Probe<int>::at(long) const");
}

static void
expect_base(const char *symbol, const char *base)
{
    size_t n = amp_symbol_base(symbol);

    if (n != strlen(base) || strncmp(symbol, base, n) != 0)
        fail_msg("amp_symbol_base(\"%s\"): \"%.*s\", not \"%s\"", symbol,
                 (int)n, symbol, base);
}

static void
test_suffixes(void **state)
{
    expect_base("_ZN3app4stepEi.isra.0", "_ZN3app4stepEi");
    expect_base("foo.constprop.0.isra.0", "foo");
    expect_base("foo.part.0.cold", "foo");
    expect_base("foo.cold", "foo");
    expect_base("foo.cold.1", "foo");
    expect_base("foo.lto_priv.0", "foo");
    expect_base("foo.llvm.8264318911731946431", "foo");
    expect_base("foo.localalias", "foo");
    expect_base("foo.clone.3", "foo");
    expect_base("foo.specialized.1", "foo");
    /* Not suffixes: no dot, a number or a word alone, a name's own dots
     * (Rust's legacy mangling), nothing left before the suffix. */
    expect_base("foo", "foo");
    expect_base("foo.1", "foo.1");
    expect_base("foo.bar", "foo.bar");
    expect_base("foo.isra.x", "foo.isra.x");
    expect_base("foo.bar.0", "foo.bar.0");
    expect_base("_ZN4core3fmt5Write..write_fmt17h0E",
                "_ZN4core3fmt5Write..write_fmt17h0E");
    expect_base(".isra.0", ".isra.0");
    expect_base("a.isra.0", "a");
    expect_base("", "");
}

static void
test_function_names(void **state)
{
    char out[AMP_SYMBOL_LEN], small[12];

    assert_string_equal(amp_function_name("_ZN3app4stepEi.isra.0", out,
                                          sizeof out),
                        "app::step(int)");
    assert_string_equal(amp_function_name("_ZN3app9trainStepEv", out,
                                          sizeof out),
                        "app::trainStep()");
    assert_string_equal(
        amp_function_name("_ZN5model4PairIfiE3runEv.constprop.0", out,
                          sizeof out),
        "model::Pair<float, int>::run()");
    assert_string_equal(amp_function_name("_ZL4stepi.part.0.cold", out,
                                          sizeof out),
                        "step(int)");
    /* C names, names that do not demangle: the suffixes go, nothing else. */
    assert_string_equal(amp_function_name("main.cold", out, sizeof out),
                        "main");
    assert_string_equal(amp_function_name("train_step", out, sizeof out),
                        "train_step");
    assert_string_equal(amp_function_name("_Zbogus.isra.0", out, sizeof out),
                        "_Zbogus");
    /* A demangled name that does not fit: the symbol, whole if it fits. */
    assert_string_equal(amp_function_name("_ZN3app4stepEi", small,
                                          sizeof small),
                        "_ZN3app4ste");
    assert_string_equal(amp_function_name("_ZN1a1bEv", small, sizeof small),
                        "a::b()");
}

static void
test_labels(void **state)
{
    char buf[AMP_LABEL_LEN], name[AMP_SYMBOL_LEN], module[300], want[2048];

    assert_string_equal(amp_symbol_label(buf, sizeof buf, "app::step(int)",
                                         "/opt/app/bin/cxx_names", 0x11a9),
                        "app::step(int) (cxx_names+0x11a9)");
    assert_string_equal(amp_symbol_label(buf, sizeof buf, "main",
                                         "cxx_names", 0x10),
                        "main (cxx_names+0x10)");
    /* No symbol covers it: the offset; outside any module: no address. */
    assert_string_equal(amp_symbol_label(buf, sizeof buf, "",
                                         "/usr/lib/libapp.so", 0x1a2b),
                        "0x1a2b (libapp.so+0x1a2b)");
    assert_string_equal(amp_symbol_label(buf, sizeof buf, NULL,
                                         "/usr/lib/libapp.so", 0x1a2b),
                        "0x1a2b (libapp.so+0x1a2b)");
    assert_string_equal(amp_symbol_label(buf, sizeof buf, NULL, NULL, 0),
                        "unknown caller (no module)");
    assert_string_equal(amp_symbol_label(buf, sizeof buf, "f", "", 0x10),
                        "unknown caller (no module)");
    /* The longest function name and a long module name: whole. */
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    memset(module, 'm', sizeof module - 1);
    module[sizeof module - 1] = '\0';
    module[0] = '/';
    module[sizeof module - 256] = '/';
    snprintf(want, sizeof want, "%s (%s+0xffffffffffff)", name,
             module + sizeof module - 255);
    assert_string_equal(amp_symbol_label(buf, sizeof buf, name, module,
                                         0xffffffffffffu),
                        want);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_function_and_stripped),
        cmocka_unit_test(test_main_program_and_nowhere),
        cmocka_unit_test(test_cxx_function),
        cmocka_unit_test(test_suffixes),
        cmocka_unit_test(test_function_names),
        cmocka_unit_test(test_labels),
    };

    if (argc != 3)
        return 2;
    fixture_path = argv[1];
    stripped_path = argv[2];
    return cmocka_run_group_tests(tests, NULL, NULL);
}
