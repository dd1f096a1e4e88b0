/* static_vendor: stands in for a program linked with cuBLAS's and cuDNN's
 * static archives: it defines functions under their names itself (as the
 * archives' objects would put them in the program) and calls them, so the
 * dynamic linker has nothing to replace. ampshim run must warn. Its own
 * helper cublas_status_text is not a cuBLAS function (the library's are
 * cublas and an upper-case letter): not counted. */
#include <stdio.h>

int cublasCreate_v2(void **handle);
int cublasSgemm_v2(void *handle);
int cudnnCreate(void **handle);

int
cublasCreate_v2(void **handle)
{
    *handle = NULL;
    return 0;
}

int
cublasSgemm_v2(void *handle)
{
    return handle != NULL;
}

int
cudnnCreate(void **handle)
{
    *handle = NULL;
    return 0;
}

/* A program's own function under a cuBLAS-like name, as the examples'
 * cublas_failed. */
__attribute__((noinline)) static const char *
cublas_status_text(int status)
{
    return status ? "failed" : "ok";
}

int
main(void)
{
    void *blas, *dnn;

    cublasCreate_v2(&blas);
    cudnnCreate(&dnn);
    printf("static_vendor: %d %s\n", cublasSgemm_v2(blas),
           cublas_status_text(0));
    return 0;
}
