/* The emulated driver's memory pools (stream-ordered allocation), as the
 * CUDA 13 driver API reference documents them (cuda.h):
 * - every device has a default pool, and a current pool that
 *   cuMemAllocAsync allocates from, the default one until
 *   cuDeviceSetMemPool names another (of that device);
 * - CU_MEMPOOL_ATTR_RELEASE_THRESHOLD (default 0): "When more than the
 *   release threshold bytes of memory are held by the memory pool, the
 *   allocator will try to release memory back to the OS on the next call
 *   to stream, event or context synchronize";
 * - CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, _ALLOW_OPPORTUNISTIC
 *   and _ALLOW_INTERNAL_DEPENDENCIES default to enabled;
 * - the _CURRENT figures are read-only; the _HIGH watermarks can only be
 *   reset to 0;
 * - a device's default pool cannot be destroyed; destroying the current
 *   pool makes the default one current again;
 * - during capture an allocation is the graph's, not the pool's.
 * What a pool holds is modelled as a byte count: an allocation that does
 * not fit in what the pool already holds maps more (counted as `maps`),
 * and a synchronisation trims the pool to its threshold. The device memory
 * itself comes from the core as for every allocation.
 * With AMPSHIM_EMU_CALL_LOG=1 each pool is printed at exit on stderr:
 * `ampshim-emu: pool ID dev=D default=0|1 allocs=A maps=M used_high=U
 * reserved_high=R release_threshold=T internal_deps=0|1`. */
#include "core_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CUmemPoolHandle_st {
    int id;                     /* 0 for a device's default pool */
    int dev;
    int live;
    cuuint64_t threshold;
    int follow_events, opportunistic, internal_deps;
    cuuint64_t used, used_high, reserved, reserved_high;
    unsigned long long allocs, maps;
    struct CUmemPoolHandle_st *next;
};

static struct CUmemPoolHandle_st pool_default[CORE_MAX_DEVICES];
static struct CUmemPoolHandle_st *pool_current[CORE_MAX_DEVICES];
static struct CUmemPoolHandle_st *pool_made; /* cuMemPoolCreate's */
static int pool_next_id = 1;

/* Live stream-ordered allocations and their pools. */
static struct pool_alloc {
    CUdeviceptr p;
    size_t bytes;
    struct CUmemPoolHandle_st *pool;
} *pool_allocs;
static size_t pool_nallocs, pool_cap;

static void
pool_defaults(struct CUmemPoolHandle_st *pool, int dev, int id)
{
    memset(pool, 0, sizeof(*pool));
    pool->id = id;
    pool->dev = dev;
    pool->live = 1;
    pool->follow_events = pool->opportunistic = pool->internal_deps = 1;
}

static struct CUmemPoolHandle_st *
pool_default_of(int dev)
{
    struct CUmemPoolHandle_st *pool = &pool_default[dev];

    if (!pool->live)
        pool_defaults(pool, dev, 0);
    return pool;
}

struct CUmemPoolHandle_st *
core_pool_current(int dev)
{
    return pool_current[dev] ? pool_current[dev] : pool_default_of(dev);
}

/* A live pool named by h, or NULL. */
static struct CUmemPoolHandle_st *
pool_lookup(CUmemoryPool h)
{
    struct CUmemPoolHandle_st *pool;
    int d;

    for (d = 0; d < CORE_MAX_DEVICES; d++)
        if (h == &pool_default[d])
            return pool_default_of(d);
    for (pool = pool_made; pool && pool != h; pool = pool->next)
        ;
    return pool && pool->live ? pool : NULL;
}

CUresult
core_pool_alloc(struct CUmemPoolHandle_st *pool, CUdeviceptr p, size_t bytes)
{
    cuuint64_t spare;

    pool = pool_lookup(pool);
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (pool_nallocs == pool_cap) {
        size_t cap = pool_cap ? pool_cap * 2 : 64;
        struct pool_alloc *a = realloc(pool_allocs, cap * sizeof(*a));

        if (!a)
            return CUDA_ERROR_OUT_OF_MEMORY;
        pool_allocs = a;
        pool_cap = cap;
    }
    pool_allocs[pool_nallocs++] = (struct pool_alloc){ p, bytes, pool };
    spare = pool->reserved - pool->used;
    if (spare < bytes) {
        pool->reserved += bytes - spare;
        pool->maps++;
    }
    pool->used += bytes;
    pool->allocs++;
    if (pool->used > pool->used_high)
        pool->used_high = pool->used;
    if (pool->reserved > pool->reserved_high)
        pool->reserved_high = pool->reserved;
    return CUDA_SUCCESS;
}

void
core_pool_free(CUdeviceptr p)
{
    size_t i;

    for (i = 0; i < pool_nallocs; i++) {
        if (pool_allocs[i].p != p)
            continue;
        if (pool_allocs[i].pool)
            pool_allocs[i].pool->used -= pool_allocs[i].bytes;
        pool_allocs[i] = pool_allocs[--pool_nallocs];
        return;
    }
}

static void
pool_trim_to(struct CUmemPoolHandle_st *pool, cuuint64_t keep)
{
    if (pool->reserved > keep)
        pool->reserved = pool->used > keep ? pool->used : keep;
}

void
core_pool_trim(int dev)
{
    struct CUmemPoolHandle_st *pool;

    if (dev < 0 || dev >= CORE_MAX_DEVICES)
        return;
    if (pool_default[dev].live)
        pool_trim_to(&pool_default[dev], pool_default[dev].threshold);
    for (pool = pool_made; pool; pool = pool->next)
        if (pool->live && pool->dev == dev)
            pool_trim_to(pool, pool->threshold);
}

static CUresult
pool_enter(void)
{
    core_lock();
    if (!core_initialised()) {
        core_unlock();
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return CUDA_SUCCESS;
}

static CUresult
pool_leave(CUresult rc)
{
    core_unlock();
    return rc;
}

CUresult
cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    struct CUmemPoolHandle_st *made;
    CUresult rc;

    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    rc = pool_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return pool_leave(CUDA_ERROR_NOT_SUPPORTED);
    if (props->location.id < 0 ||
        props->location.id >= core_device_count())
        return pool_leave(CUDA_ERROR_INVALID_VALUE);
    made = malloc(sizeof(*made));
    if (!made)
        return pool_leave(CUDA_ERROR_OUT_OF_MEMORY);
    pool_defaults(made, props->location.id, pool_next_id++);
    made->next = pool_made;
    pool_made = made;
    *pool = made;
    return pool_leave(CUDA_SUCCESS);
}

CUresult
cuMemPoolDestroy(CUmemoryPool h)
{
    struct CUmemPoolHandle_st *pool;
    size_t i;
    CUresult rc = pool_enter();

    if (rc != CUDA_SUCCESS)
        return rc;
    pool = pool_lookup(h);
    if (!pool || pool->id == 0)
        return pool_leave(CUDA_ERROR_INVALID_VALUE);
    pool->live = 0;
    if (pool_current[pool->dev] == pool)
        pool_current[pool->dev] = NULL;
    /* Memory still allocated from it stays valid until freed. */
    for (i = 0; i < pool_nallocs; i++)
        if (pool_allocs[i].pool == pool)
            pool_allocs[i].pool = NULL;
    return pool_leave(CUDA_SUCCESS);
}

/* Where attribute attr of pool lives: an int flag (*flag) or a byte count
 * (*bytes), and how cuMemPoolSetAttribute may set it. -1 for an
 * attribute pools do not have. */
enum pool_set { POOL_READ_ONLY, POOL_ANY, POOL_RESET_ONLY };

static int
pool_attr(struct CUmemPoolHandle_st *pool, CUmemPool_attribute attr,
          int **flag, cuuint64_t **bytes, enum pool_set *set)
{
    *flag = NULL;
    *bytes = NULL;
    *set = POOL_ANY;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        *flag = &pool->follow_events;
        return 0;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        *flag = &pool->opportunistic;
        return 0;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *flag = &pool->internal_deps;
        return 0;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        *bytes = &pool->threshold;
        return 0;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        *bytes = &pool->reserved;
        *set = POOL_READ_ONLY;
        return 0;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        *bytes = &pool->reserved_high;
        *set = POOL_RESET_ONLY;
        return 0;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        *bytes = &pool->used;
        *set = POOL_READ_ONLY;
        return 0;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        *bytes = &pool->used_high;
        *set = POOL_RESET_ONLY;
        return 0;
    default:
        return -1;
    }
}

CUresult
cuMemPoolSetAttribute(CUmemoryPool h, CUmemPool_attribute attr, void *value)
{
    struct CUmemPoolHandle_st *pool;
    cuuint64_t *bytes;
    enum pool_set set;
    int *flag;
    CUresult rc;

    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    rc = pool_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    pool = pool_lookup(h);
    if (!pool || pool_attr(pool, attr, &flag, &bytes, &set) != 0 ||
        set == POOL_READ_ONLY ||
        (set == POOL_RESET_ONLY && *(cuuint64_t *)value != 0))
        return pool_leave(CUDA_ERROR_INVALID_VALUE);
    if (flag)
        *flag = *(int *)value != 0;
    else
        *bytes = *(cuuint64_t *)value;
    return pool_leave(CUDA_SUCCESS);
}

CUresult
cuMemPoolGetAttribute(CUmemoryPool h, CUmemPool_attribute attr, void *value)
{
    struct CUmemPoolHandle_st *pool;
    cuuint64_t *bytes;
    enum pool_set set;
    int *flag;
    CUresult rc;

    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    rc = pool_enter();
    if (rc != CUDA_SUCCESS)
        return rc;
    pool = pool_lookup(h);
    if (!pool || pool_attr(pool, attr, &flag, &bytes, &set) != 0)
        return pool_leave(CUDA_ERROR_INVALID_VALUE);
    if (flag)
        *(int *)value = *flag;
    else
        *(cuuint64_t *)value = *bytes;
    return pool_leave(CUDA_SUCCESS);
}

CUresult
cuMemPoolTrimTo(CUmemoryPool h, size_t minBytesToKeep)
{
    struct CUmemPoolHandle_st *pool;
    CUresult rc = pool_enter();

    if (rc != CUDA_SUCCESS)
        return rc;
    pool = pool_lookup(h);
    if (!pool)
        return pool_leave(CUDA_ERROR_INVALID_VALUE);
    pool_trim_to(pool, minBytesToKeep);
    return pool_leave(CUDA_SUCCESS);
}

static CUresult
pool_device(CUdevice dev)
{
    CUresult rc = pool_enter();

    if (rc == CUDA_SUCCESS && (dev < 0 || dev >= core_device_count())) {
        core_unlock();
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return rc;
}

CUresult
cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult rc;

    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    rc = pool_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    *pool_out = pool_default_of(dev);
    return pool_leave(CUDA_SUCCESS);
}

CUresult
cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult rc;

    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    rc = pool_device(dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    *pool = core_pool_current(dev);
    return pool_leave(CUDA_SUCCESS);
}

CUresult
cuDeviceSetMemPool(CUdevice dev, CUmemoryPool h)
{
    struct CUmemPoolHandle_st *pool;
    CUresult rc = pool_device(dev);

    if (rc != CUDA_SUCCESS)
        return rc;
    pool = pool_lookup(h);
    if (!pool || pool->dev != dev)
        return pool_leave(CUDA_ERROR_INVALID_VALUE);
    pool_current[dev] = pool->id == 0 ? NULL : pool;
    return pool_leave(CUDA_SUCCESS);
}

static void
pool_print(const struct CUmemPoolHandle_st *pool)
{
    fprintf(stderr, "ampshim-emu: pool %d dev=%d default=%d allocs=%llu "
            "maps=%llu used_high=%llu reserved_high=%llu "
            "release_threshold=%llu internal_deps=%d\n", pool->id, pool->dev,
            pool->id == 0, pool->allocs, pool->maps,
            (unsigned long long)pool->used_high,
            (unsigned long long)pool->reserved_high,
            (unsigned long long)pool->threshold, pool->internal_deps);
}

__attribute__((destructor)) static void
pool_report(void)
{
    const struct CUmemPoolHandle_st *pool;
    int d;

    if (!emu_call_log_on())
        return;
    for (d = 0; d < CORE_MAX_DEVICES; d++)
        if (pool_default[d].live && pool_default[d].allocs)
            pool_print(&pool_default[d]);
    for (pool = pool_made; pool; pool = pool->next)
        if (pool->allocs)
            pool_print(pool);
}
