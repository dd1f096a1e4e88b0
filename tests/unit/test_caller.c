/* Unit tests of the caller's classification: which release of a hooked
 * library a name is, which names are NVIDIA's libraries, and the route of
 * a call from this program. */
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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_releases),
        cmocka_unit_test(test_nvidia_libraries),
        cmocka_unit_test(test_route_of_the_program),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
