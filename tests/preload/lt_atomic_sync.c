/* A test double of cuBLAS 12.x's atomic synchronisation attributes, for
 * the preload tests: cuBLAS 13.1 (the emulated library, like the real
 * one) has none, and refuses matmul descriptor attributes 27 to 30. cuBLAS
 * 12.x's cublasLt.h documents them: CUBLASLT_MATMUL_DESC_ATOMIC_SYNC_
 * NUM_CHUNKS_D_ROWS (27) and _COLS (28), int32_t, default 0 (atomic
 * synchronisation disabled), and _IN_COUNTERS_POINTER (29) and
 * _OUT_COUNTERS_POINTER (30), int32_t *, default NULL. Preloaded after the
 * shim, this library answers cublasLtMatmulDescSetAttribute and
 * cublasLtMatmulDescGetAttribute for those four as cuBLAS 12.x does (the
 * values kept per descriptor, forgotten when one is made or destroyed at
 * its address) and hands every other attribute to the library behind it. It runs no product: a call the shim passes through
 * reaches the emulator, which ignores the counters. */
#include <cublasLt.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#define ATOMIC_FIRST 27
#define ATOMIC_LAST 30
#define DESCS 64

typedef cublasStatus_t (*set_fn)(cublasLtMatmulDesc_t,
                                 cublasLtMatmulDescAttributes_t, const void *,
                                 size_t);
typedef cublasStatus_t (*get_fn)(cublasLtMatmulDesc_t,
                                 cublasLtMatmulDescAttributes_t, void *,
                                 size_t, size_t *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    cublasLtMatmulDesc_t desc;
    int32_t chunks[2];
    void *counters[2];
} table[DESCS];

static int
is_atomic(cublasLtMatmulDescAttributes_t attr)
{
    return (int)attr >= ATOMIC_FIRST && (int)attr <= ATOMIC_LAST;
}

static size_t
attr_size(cublasLtMatmulDescAttributes_t attr)
{
    return (int)attr <= 28 ? sizeof(int32_t) : sizeof(void *);
}

/* The descriptor's entry, made when `make`; NULL when there is none (its
 * values are the defaults) or no room. Lock held. */
static void *
value_of(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
         int make)
{
    int i, free_at = -1;

    for (i = 0; i < DESCS; i++) {
        if (table[i].desc == desc)
            break;
        if (!table[i].desc && free_at < 0)
            free_at = i;
    }
    if (i == DESCS) {
        if (!make || free_at < 0)
            return NULL;
        i = free_at;
        memset(&table[i], 0, sizeof(table[i]));
        table[i].desc = desc;
    }
    return (int)attr <= 28 ? (void *)&table[i].chunks[(int)attr - 27]
                           : (void *)&table[i].counters[(int)attr - 29];
}

/* A descriptor made or destroyed at `desc`: its values are the defaults. */
static void
forget(cublasLtMatmulDesc_t desc)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < DESCS; i++)
        if (table[i].desc == desc)
            table[i].desc = NULL;
    pthread_mutex_unlock(&lock);
}

typedef cublasStatus_t (*create_fn)(cublasLtMatmulDesc_t *,
                                    cublasComputeType_t, cudaDataType_t);
typedef cublasStatus_t (*init_fn)(cublasLtMatmulDesc_t, size_t,
                                  cublasComputeType_t, cudaDataType_t);
typedef cublasStatus_t (*destroy_fn)(cublasLtMatmulDesc_t);

cublasStatus_t
cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *matmulDesc,
                         cublasComputeType_t computeType,
                         cudaDataType_t scaleType)
{
    create_fn next;
    cublasStatus_t s;

    *(void **)&next = dlsym(RTLD_NEXT, "cublasLtMatmulDescCreate");
    s = next ? next(matmulDesc, computeType, scaleType)
             : CUBLAS_STATUS_NOT_INITIALIZED;
    if (s == CUBLAS_STATUS_SUCCESS)
        forget(*matmulDesc);
    return s;
}

cublasStatus_t
cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                cublasComputeType_t computeType,
                                cudaDataType_t scaleType)
{
    init_fn next;
    cublasStatus_t s;

    *(void **)&next = dlsym(RTLD_NEXT, "cublasLtMatmulDescInit_internal");
    s = next ? next(matmulDesc, size, computeType, scaleType)
             : CUBLAS_STATUS_NOT_INITIALIZED;
    if (s == CUBLAS_STATUS_SUCCESS)
        forget(matmulDesc);
    return s;
}

cublasStatus_t
cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc)
{
    destroy_fn next;

    *(void **)&next = dlsym(RTLD_NEXT, "cublasLtMatmulDescDestroy");
    forget(matmulDesc);
    return next ? next(matmulDesc) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t
cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               const void *buf, size_t sizeInBytes)
{
    void *at;

    if (!is_atomic(attr)) {
        set_fn next;

        *(void **)&next = dlsym(RTLD_NEXT, "cublasLtMatmulDescSetAttribute");
        return next ? next(matmulDesc, attr, buf, sizeInBytes)
                    : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    if (!matmulDesc || !buf || sizeInBytes != attr_size(attr))
        return CUBLAS_STATUS_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    at = value_of(matmulDesc, attr, 1);
    if (at)
        memcpy(at, buf, sizeInBytes);
    pthread_mutex_unlock(&lock);
    return at ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t
cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc,
                               cublasLtMatmulDescAttributes_t attr,
                               void *buf, size_t sizeInBytes,
                               size_t *sizeWritten)
{
    size_t size = attr_size(attr);
    void *at;

    if (!is_atomic(attr)) {
        get_fn next;

        *(void **)&next = dlsym(RTLD_NEXT, "cublasLtMatmulDescGetAttribute");
        return next ? next(matmulDesc, attr, buf, sizeInBytes, sizeWritten)
                    : CUBLAS_STATUS_NOT_INITIALIZED;
    }
    if (!matmulDesc)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (sizeInBytes == 0) {
        if (!sizeWritten)
            return CUBLAS_STATUS_INVALID_VALUE;
        *sizeWritten = size;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || sizeInBytes != size)
        return CUBLAS_STATUS_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    at = value_of(matmulDesc, attr, 0);
    if (at)
        memcpy(buf, at, size);
    else
        memset(buf, 0, size);
    pthread_mutex_unlock(&lock);
    if (sizeWritten)
        *sizeWritten = size;
    return CUBLAS_STATUS_SUCCESS;
}
