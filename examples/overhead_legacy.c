/* overhead_bench's legacy cublasSgemm (cublas.h: no handle; the kernel
 * stream is the default one). */
#include <cublas.h>

#include "overhead_bench.h"

#include <stdio.h>

static float *ob_a, *ob_b, *ob_c;

int
ob_legacy_setup(void)
{
    if (cublasInit() != CUBLAS_STATUS_SUCCESS ||
        cublasAlloc(OB_M * OB_K, sizeof(float), (void **)&ob_a) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasAlloc(OB_K * OB_N, sizeof(float), (void **)&ob_b) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasAlloc(OB_M * OB_N, sizeof(float), (void **)&ob_c) !=
            CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "overhead_bench: the legacy cuBLAS set-up failed\n");
        return -1;
    }
    return 0;
}

long
ob_legacy_issue(long calls)
{
    long i, failed = 0;

    for (i = 0; i < calls; i++) {
        cublasSgemm('N', 'N', OB_M, OB_N, OB_K, 1.0f, ob_a, OB_M, ob_b, OB_K,
                    0.0f, ob_c, OB_M);
        failed += cublasGetError() != CUBLAS_STATUS_SUCCESS;
    }
    return failed;
}

void
ob_legacy_teardown(void)
{
    cublasFree(ob_a);
    cublasFree(ob_b);
    cublasFree(ob_c);
    cublasShutdown();
}
