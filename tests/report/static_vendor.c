/* static_vendor: stands in for a program linked with cuBLAS's and cuDNN's
 * static archives: it defines functions under their names itself (as the
 * archives' objects would put them in the program) and calls them, so the
 * dynamic linker has nothing to replace. ampshim run must warn. */
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

int
main(void)
{
    void *blas, *dnn;

    cublasCreate_v2(&blas);
    cudnnCreate(&dnn);
    printf("static_vendor: %d\n", cublasSgemm_v2(blas));
    return 0;
}
