/* Tests for the generated stubs (scripts/emu_stubs.py): a function the
 * real library exports (the driver's: the toolkit's link stub's) and the
 * emulator does not implement returns the vendor's not-supported status, or NaN with the legacy error set, and
 * says so in exactly one line on stderr, the first time only. Each test
 * calls functions no other test calls (a stub speaks once per process). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cublas.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* stderr, redirected to a temporary file while a test calls stubs. */
struct capture {
    FILE *file;
    int saved;
};

static void
capture_begin(struct capture *c)
{
    fflush(stderr);
    c->file = tmpfile();
    assert_non_null(c->file);
    c->saved = dup(STDERR_FILENO);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->file), STDERR_FILENO) >= 0);
}

/* Restores stderr and returns what was written to it (static). */
static const char *
capture_end(struct capture *c)
{
    static char text[4096];
    size_t n;

    fflush(stderr);
    assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
    close(c->saved);
    rewind(c->file);
    n = fread(text, 1, sizeof(text) - 1, c->file);
    text[n] = '\0';
    fclose(c->file);
    return text;
}

/* A v2 function: NOT_SUPPORTED every time, one line the first time. */
static void
test_status_stub(void **state)
{
    struct capture c;
    const char *said;
    int info = 0;

    (void)state;
    capture_begin(&c);
    for (int i = 0; i < 3; i++)
        assert_int_equal(cublasSgetrfBatched(NULL, 4, NULL, 4, NULL, &info,
                                             1),
                         CUBLAS_STATUS_NOT_SUPPORTED);
    said = capture_end(&c);
    assert_string_equal(said, "ampshim-emu: cublasSgetrfBatched is not "
                        "implemented by the emulator (returns "
                        "CUBLAS_STATUS_NOT_SUPPORTED)\n");
}

/* A legacy function with a float result: NaN, and cublasGetError gives
 * NOT_SUPPORTED (read and cleared), as a failed legacy call. */
static void
test_legacy_stub(void **state)
{
    struct capture c;
    const char *said;

    (void)state;
    assert_int_equal(cublasInit(), CUBLAS_STATUS_SUCCESS);
    capture_begin(&c);
    for (int i = 0; i < 2; i++) {
        assert_true(isnan(cublasSnrm2(3, NULL, 1)));
        assert_int_equal(cublasGetError(), CUBLAS_STATUS_NOT_SUPPORTED);
        assert_int_equal(cublasGetError(), CUBLAS_STATUS_SUCCESS);
    }
    said = capture_end(&c);
    assert_string_equal(said, "ampshim-emu: cublasSnrm2 is not implemented "
                        "by the emulator (returns NaN; cublasGetError: "
                        "CUBLAS_STATUS_NOT_SUPPORTED)\n");
    assert_int_equal(cublasShutdown(), CUBLAS_STATUS_SUCCESS);
}

/* A complex result: both parts NaN. */
static void
test_complex_stub(void **state)
{
    struct capture c;
    cuDoubleComplex z;

    (void)state;
    capture_begin(&c);
    z = cublasZdotc(2, NULL, 1, NULL, 1);
    capture_end(&c);
    assert_true(isnan(z.x) && isnan(z.y));
}

static void
test_cudnn_stub(void **state)
{
    cudnnRNNDataDescriptor_t desc = NULL;
    struct capture c;
    const char *said;

    (void)state;
    capture_begin(&c);
    assert_int_equal(cudnnCreateRNNDataDescriptor(&desc),
                     CUDNN_STATUS_NOT_SUPPORTED);
    assert_int_equal(cudnnCreateRNNDataDescriptor(&desc),
                     CUDNN_STATUS_NOT_SUPPORTED);
    said = capture_end(&c);
    assert_null(desc);
    assert_string_equal(said, "ampshim-emu: cudnnCreateRNNDataDescriptor is "
                        "not implemented by the emulator (returns "
                        "CUDNN_STATUS_NOT_SUPPORTED)\n");
}

/* The runtime's and the driver's stubs, in their own status types. */
static void
test_runtime_and_driver_stubs(void **state)
{
    struct cudaMemcpy3DParms rp;
    CUDA_MEMCPY3D dp;
    struct capture c;
    const char *said;

    (void)state;
    memset(&rp, 0, sizeof(rp));
    memset(&dp, 0, sizeof(dp));
    capture_begin(&c);
    assert_int_equal(cudaMemcpy3D(&rp), cudaErrorNotSupported);
    assert_int_equal(cuMemcpy3D(&dp), CUDA_ERROR_NOT_SUPPORTED);
    assert_int_equal(cudaMemcpy3D(&rp), cudaErrorNotSupported);
    said = capture_end(&c);
    assert_string_equal(said, "ampshim-emu: cudaMemcpy3D is not implemented "
                        "by the emulator (returns cudaErrorNotSupported)\n"
                        "ampshim-emu: cuMemcpy3D_v2 is not implemented by "
                        "the emulator (returns CUDA_ERROR_NOT_SUPPORTED)\n");
}

static int failures;

static void *
call_getri(void *arg)
{
    int info = 0;

    (void)arg;
    for (int i = 0; i < 100; i++)
        if (cublasDgetriBatched(NULL, 2, NULL, 2, NULL, NULL, 2, &info, 1) !=
            CUBLAS_STATUS_NOT_SUPPORTED)
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* First calls from many threads at once still make one line. */
static void
test_once_across_threads(void **state)
{
    enum { THREADS = 8 };
    pthread_t t[THREADS];
    struct capture c;
    const char *said;

    (void)state;
    capture_begin(&c);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, call_getri, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    said = capture_end(&c);
    assert_int_equal(failures, 0);
    assert_string_equal(said, "ampshim-emu: cublasDgetriBatched is not "
                        "implemented by the emulator (returns "
                        "CUBLAS_STATUS_NOT_SUPPORTED)\n");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_stub),
        cmocka_unit_test(test_legacy_stub),
        cmocka_unit_test(test_complex_stub),
        cmocka_unit_test(test_cudnn_stub),
        cmocka_unit_test(test_runtime_and_driver_stubs),
        cmocka_unit_test(test_once_across_threads),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
