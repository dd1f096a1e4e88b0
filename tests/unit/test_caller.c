/* Unit tests of the caller's classification: which release of a hooked
 * library a name is, which names are NVIDIA's libraries, the route of a
 * call from this program, and a hooked call's stack, looked up with and
 * without a hint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/caller.h"

#include <gnu/libc-version.h>
#include <string.h>

static void
test_releases(void **state)
{
    (void)state;
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS, "libcublas.so.13"),
                     AMP_RELEASE_OWN);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS, "libcublas.so.12"),
                     AMP_RELEASE_OTHER);
    /* A path, and a file named with the whole version. */
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS,
                                     "/opt/nvidia/cublas/lib/libcublas.so.12"),
                     AMP_RELEASE_OTHER);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS,
                                     "libcublas.so.13.1.0.3"),
                     AMP_RELEASE_OWN);
    /* No release number: the shim's (a development link). */
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS, "libcublas.so"),
                     AMP_RELEASE_OWN);
    /* cuBLASLt is not cuBLAS, nor the other way round. */
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS, "libcublasLt.so.13"),
                     AMP_RELEASE_NONE);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLASLT, "libcublasLt.so.13"),
                     AMP_RELEASE_OWN);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLASLT, "libcublas.so.13"),
                     AMP_RELEASE_NONE);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLASLT, "libcublasLt.so.12"),
                     AMP_RELEASE_OTHER);
    /* cuDNN and its parts. */
    assert_int_equal(amp_lib_release(AMP_LIB_CUDNN, "libcudnn.so.9"),
                     AMP_RELEASE_OWN);
    assert_int_equal(amp_lib_release(AMP_LIB_CUDNN, "libcudnn_cnn.so.9"),
                     AMP_RELEASE_OWN);
    assert_int_equal(amp_lib_release(AMP_LIB_CUDNN, "libcudnn.so.8"),
                     AMP_RELEASE_OTHER);
    assert_int_equal(amp_lib_release(AMP_LIB_CUDNN,
                                     "libcudnn_ops_infer.so.8"),
                     AMP_RELEASE_OTHER);
    assert_int_equal(amp_lib_release(AMP_LIB_CUDNN, "libcudnnx.so.9"),
                     AMP_RELEASE_NONE);
    assert_int_equal(amp_lib_release(AMP_LIB_CUDART, "libcudart.so.12"),
                     AMP_RELEASE_OTHER);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS, "libc.so.6"),
                     AMP_RELEASE_NONE);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS, ""), AMP_RELEASE_NONE);
    assert_int_equal(amp_lib_release(AMP_LIB_CUBLAS, NULL), AMP_RELEASE_NONE);
    assert_string_equal(amp_lib_soname(AMP_LIB_CUBLAS), "libcublas.so.13");
    assert_string_equal(amp_lib_soname(AMP_LIB_CUDNN), "libcudnn.so.9");
}

static void
test_nvidia_libraries(void **state)
{
    static const char *const nvidia[] = {
        "libcusolver.so.12", "libcusolver.so.11", "libcusolverMg.so.12",
        "libcusparse.so.12", "libcufft.so.12", "libcufftw.so.12",
        "libcublas.so.13", "libcublas.so.12", "libcublasLt.so.13",
        "libcudnn.so.9", "libcudnn_cnn.so.9", "libcudnn_graph.so.9",
        "libcudnn_engines_precompiled.so.9", "libcudnn_ops_infer.so.8",
        "libnccl.so.2", "libcurand.so.10", "libcutensor.so.2",
        "libcudss.so.0", "libnvinfer.so.10", "libcudart.so.13",
        "libcuda.so.1",
        ("/usr/local/lib/python3.12/site-packages/nvidia/cusolver/lib/"
         "libcusolver.so.11"),
    };
    static const char *const others[] = {
        "libnvblas.so.13",          /* the program's own BLAS calls */
        "libtorch_cuda.so", "libampshim.so", "libc.so.6", "",
        "cublas.cpython-312-x86_64-linux-gnu.so", /* CuPy's extension */
        "libcudaxyz.so", "libcublasfoo.so.1", "libxla_extension.so",
    };

    (void)state;
    for (size_t i = 0; i < sizeof nvidia / sizeof *nvidia; i++)
        if (!amp_soname_nvidia(nvidia[i]))
            fail_msg("%s: expected one of NVIDIA's libraries", nvidia[i]);
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (amp_soname_nvidia(others[i]))
            fail_msg("%s: expected none of NVIDIA's libraries", others[i]);
    assert_false(amp_soname_nvidia(NULL));
}

/* This program depends on no cuBLAS and is none of NVIDIA's libraries:
 * the shim's own resolution serves its calls, the same route every time. */
static void
test_route_of_the_program(void **state)
{
    static const char name[] = "cublasSgemm_v2";
    void (*fn)(void **) = test_releases;
    const char *(*libc_fn)(void) = gnu_get_libc_version;
    const void *here, *in_libc;
    struct amp_route r, again;

    (void)state;
    memcpy(&here, &fn, sizeof here);
    memcpy(&in_libc, &libc_fn, sizeof in_libc);
    r = amp_route(AMP_LIB_CUBLAS, name, here);
    again = amp_route(AMP_LIB_CUBLAS, name, here);
    assert_null(r.fn);
    assert_int_equal(r.other, 0);
    assert_int_equal(r.library, 0);
    assert_memory_equal(&r, &again, sizeof r);
    /* The main program has no soname: its name is "". */
    assert_string_equal(amp_object_soname_at(here), "");
    assert_string_equal(amp_object_soname_at(in_libc), "libc.so.6");
}

/* A hook's call stack as the hooks take it: its return address, then its
 * caller's (hint NULL: amp_caller_stack). */
static __attribute__((noinline)) int
stack_hook(const void **frames, const void **hint)
{
    const void *ret = __builtin_return_address(0);
    int n = hint ? amp_caller_stack_hinted(ret, frames, 2, hint)
                 : amp_caller_stack(ret, frames, 2);

    __asm__ volatile("" ::: "memory"); /* not a tail call */
    return n;
}

/* One call site of the hook... */
static __attribute__((noinline)) int
stack_site(const void **frames, const void **hint)
{
    int n = stack_hook(frames, hint);

    __asm__ volatile("" ::: "memory");
    return n;
}

/* ...reached from two callers: two stacks. Each caller's barrier has
 * its own text, so that the compiler does not fold one into the other. */
#define STACK_CALLER(name)                                                  \
    static __attribute__((noinline)) int name(const void **frames,           \
                                              const void **hint)             \
    {                                                                        \
        int n = stack_site(frames, hint);                                    \
                                                                             \
        __asm__ volatile("# " #name ::: "memory");                           \
        return n;                                                            \
    }
STACK_CALLER(stack_from_a)
STACK_CALLER(stack_from_b)

/* The two callers' stacks share the hook's return address and differ
 * above it; asked again (remembered), and with a hint, each is the same;
 * a hint another stack set is not taken for this one. */
static void
test_stacks(void **state)
{
    const void *a[2], *b[2], *again[2], *hinted[2];
    const void *hint = NULL;
    int i;

    (void)state;
    assert_int_equal(stack_from_a(a, NULL), 2);
    assert_int_equal(stack_from_b(b, NULL), 2);
    assert_ptr_equal(a[0], b[0]);
    assert_ptr_not_equal(a[1], b[1]);
    for (i = 0; i < 3; i++) {
        assert_int_equal(stack_from_a(again, NULL), 2);
        assert_memory_equal(again, a, sizeof a);
        assert_int_equal(stack_from_a(hinted, &hint), 2);
        assert_memory_equal(hinted, a, sizeof a);
        assert_non_null(hint);
        /* The hint a's stack left: b's stack is b's all the same. */
        assert_int_equal(stack_from_b(hinted, &hint), 2);
        assert_memory_equal(hinted, b, sizeof b);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_releases),
        cmocka_unit_test(test_nvidia_libraries),
        cmocka_unit_test(test_route_of_the_program),
        cmocka_unit_test(test_stacks),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
