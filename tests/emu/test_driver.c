/* The emulated driver API against naive references: devices, contexts,
 * memory the host cannot touch, deferred per-stream execution, events and
 * modelled time, capture, modules and launches, fault injection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "emu.h"
#include "emu_kernels.h"
#include "amp_kernels.h"
#include "amp_math.h"

#include <cuda.h>
#include <math.h>
#include <pthread.h>
#include <sys/resource.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(call) assert_int_equal((call), CUDA_SUCCESS)

/* A module image in the fatbin container format: the 16-byte header
 * (magic, version, header size, payload size) and a payload that names
 * the one kernel it holds. */
static unsigned char fake_fatbin[16 + 64];

static void
make_fatbin(const char *kernel)
{
    uint32_t magic = 0xBA55ED50u;
    uint16_t version = 1, header = 16;
    uint64_t payload = 64;

    memset(fake_fatbin, 0, sizeof(fake_fatbin));
    memcpy(fake_fatbin, &magic, 4);
    memcpy(fake_fatbin + 4, &version, 2);
    memcpy(fake_fatbin + 6, &header, 2);
    memcpy(fake_fatbin + 8, &payload, 8);
    snprintf((char *)fake_fatbin + 16, 64, "code for %s", kernel);
}

/* Runs this binary again as `self --child scenario` with one environment
 * variable set; returns its exit status, or 128 + signal when killed. */
static int
run_child(const char *scenario, const char *var, const char *value)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        if (var)
            setenv(var, value, 1);
        execl("/proc/self/exe", "child", "--child", scenario, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* run_child with the child's stderr in text (cap bytes, terminated). */
static int
run_child_stderr(const char *scenario, const char *var, const char *value,
                 char *text, size_t cap)
{
    char path[] = "/tmp/emu-child-XXXXXX";
    int fd = mkstemp(path), saved, rc;
    ssize_t got;

    text[0] = '\0';
    if (fd < 0)
        return -1;
    saved = dup(2);
    dup2(fd, 2);
    rc = run_child(scenario, var, value);
    dup2(saved, 2);
    close(saved);
    got = pread(fd, text, cap - 1, 0);
    close(fd);
    unlink(path);
    text[got > 0 ? got : 0] = '\0';
    return rc;
}

static CUcontext primary;

/* Runs first: nothing works before cuInit. */
static void
test_not_initialised(void **state)
{
    int n;
    CUdeviceptr p;
    CUcontext c;

    assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuInit(0));
    /* Initialised, but no context is current yet. */
    assert_int_equal(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
}

static void
test_devices(void **state)
{
    const struct emu_gpu *gpu = emu_gpu();
    char name[256];
    int n, v, version;
    size_t total;
    CUdevice d;

    CHECK(cuDriverGetVersion(&version));
    assert_int_equal(version, 13000);
    CHECK(cuDeviceGetCount(&n));
    assert_int_equal(n, 1);
    CHECK(cuDeviceGet(&d, 0));
    assert_int_equal(cuDeviceGet(&d, 1), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(cuDeviceGet(&d, -1), CUDA_ERROR_INVALID_DEVICE);
    CHECK(cuDeviceGetName(name, sizeof(name), 0));
    assert_string_equal(name, gpu->name);
    CHECK(cuDeviceTotalMem(&total, 0));
    assert_true(total == gpu->total_mem);
    CHECK(cuDeviceGetAttribute(
        &v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    assert_int_equal(v, gpu->cc_major);
    CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                               0));
    assert_int_equal(v, gpu->sm_count);
    CHECK(cuDeviceGetAttribute(
        &v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    assert_int_equal(v, 1);
    CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    assert_int_equal(v, 32);
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuDeviceGetAttribute(
                         &v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 3),
                     CUDA_ERROR_INVALID_DEVICE);
}

/* cuda.h declares it only under CUDA_API_PER_THREAD_DEFAULT_STREAM (as
 * cuGraphLaunch). */
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);

/* cuGetProcAddress: the driver's own definitions by base name (the
 * versioned one for a versioned name; with the per-thread flag its _ptsz
 * version where the driver has one), NULL with SYMBOL_NOT_FOUND for an
 * unknown name, INVALID_VALUE for bad arguments or a CUDA version newer
 * than the driver's. */
static void
test_proc_address(void **state)
{
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
    __typeof__(&cuMemAlloc) alloc;
    __typeof__(&cuInit) init;
    __typeof__(&cuGraphLaunch) launch;
    void *p = &found;

    CHECK(cuGetProcAddress("cuMemAlloc", &p, 13000,
                           CU_GET_PROC_ADDRESS_DEFAULT, &found));
    assert_int_equal(found, CU_GET_PROC_ADDRESS_SUCCESS);
    memcpy(&alloc, &p, sizeof p);
    assert_true(alloc == cuMemAlloc); /* cuMemAlloc_v2 */
    CHECK(cuGetProcAddress("cuInit", &p, 12000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                           NULL));
    memcpy(&init, &p, sizeof p);
    assert_true(init == cuInit);
    /* Per-thread versions where the driver has one. */
    CHECK(cuGetProcAddress("cuGraphLaunch", &p, 13000,
                           CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                           &found));
    memcpy(&launch, &p, sizeof p);
    assert_true(launch == cuGraphLaunch_ptsz);
    CHECK(cuGetProcAddress("cuGraphLaunch", &p, 13000,
                           CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found));
    memcpy(&launch, &p, sizeof p);
    assert_true(launch == cuGraphLaunch);
    CHECK(cuGetProcAddress("cuNoSuchFunction", &p, 13000,
                           CU_GET_PROC_ADDRESS_DEFAULT, &found));
    assert_null(p);
    assert_int_equal(found, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_int_equal(cuGetProcAddress(NULL, &p, 13000, 0, &found),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGetProcAddress("cuInit", NULL, 13000, 0, &found),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGetProcAddress("cuInit", &p, 13010, 0, &found),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGetProcAddress("cuInit", &p, 13000, 4, &found),
                     CUDA_ERROR_INVALID_VALUE);
}

static void
test_contexts(void **state)
{
    CUcontext c, own, popped;
    CUdevice d;
    unsigned flags;
    int active;

    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(active, 0);
    CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(active, 1);
    /* Retaining does not make it current. */
    CHECK(cuCtxGetCurrent(&c));
    assert_null(c);
    CHECK(cuCtxSetCurrent(primary));
    CHECK(cuCtxGetCurrent(&c));
    assert_ptr_equal(c, primary);
    CHECK(cuCtxGetDevice(&d));
    assert_int_equal(d, 0);

    /* A created context is pushed; popping returns to the primary. */
    CHECK(cuCtxCreate(&own, NULL, 0, 0));
    CHECK(cuCtxGetCurrent(&c));
    assert_ptr_equal(c, own);
    CHECK(cuCtxPopCurrent(&popped));
    assert_ptr_equal(popped, own);
    CHECK(cuCtxGetCurrent(&c));
    assert_ptr_equal(c, primary);
    CHECK(cuCtxDestroy(own));
    assert_int_equal(cuCtxDestroy(own), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuCtxPushCurrent(own), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuCtxDestroy(primary), CUDA_ERROR_INVALID_CONTEXT);
}

static void
test_memory_round_trip(void **state)
{
    float host[1000], back[1000];
    unsigned char raw[64];
    size_t free0, free1, total;
    CUdeviceptr a, b;
    int i;

    for (i = 0; i < 1000; i++)
        host[i] = (float)i * 0.5f - 7.0f;
    assert_int_equal(cuMemAlloc(&a, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemGetInfo(&free0, &total));
    CHECK(cuMemAlloc(&a, sizeof(host)));
    CHECK(cuMemAlloc(&b, sizeof(host)));
    CHECK(cuMemGetInfo(&free1, &total));
    assert_true(free0 - free1 >= 2 * sizeof(host));
    assert_int_equal(a % 256, 0);

    /* Fresh memory is not zero: it reads as all-ones bytes (NaN). */
    CHECK(cuMemcpyDtoH(raw, a, sizeof(raw)));
    for (i = 0; i < 64; i++)
        assert_int_equal(raw[i], 0xff);

    CHECK(cuMemcpyHtoD(a, host, sizeof(host)));
    CHECK(cuMemcpyDtoD(b, a, sizeof(host)));
    memset(back, 0, sizeof(back));
    CHECK(cuMemcpyDtoH(back, b, sizeof(host)));
    assert_memory_equal(back, host, sizeof(host));

    /* Unified cuMemcpy tells the sides apart by address. */
    memset(back, 0, sizeof(back));
    CHECK(cuMemcpy((CUdeviceptr)(uintptr_t)back, a, 40));
    assert_memory_equal(back, host, 40);

    /* A copy that runs past the allocation is refused and touches
     * nothing. */
    assert_int_equal(cuMemcpyHtoD(a + 4, host, sizeof(host)),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpyDtoH(back, a, sizeof(host) + 1),
                     CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemcpyDtoH(back, a, sizeof(host)));
    assert_memory_equal(back, host, sizeof(host));

    CHECK(cuMemFree(a));
    CHECK(cuMemFree(b));
    assert_int_equal(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpyDtoH(back, a, 4), CUDA_ERROR_INVALID_VALUE);
}

static void
test_memcpy_2d(void **state)
{
    float host[6][5], back[4][3];
    CUDA_MEMCPY2D p;
    CUdeviceptr d;
    int r, c;

    for (r = 0; r < 6; r++)
        for (c = 0; c < 5; c++)
            host[r][c] = (float)(10 * r + c);
    CHECK(cuMemAlloc(&d, 4 * 8 * sizeof(float)));
    /* Rows 1..4, columns 2..4 of the host array into a pitched buffer. */
    memset(&p, 0, sizeof(p));
    p.srcMemoryType = CU_MEMORYTYPE_HOST;
    p.srcHost = host;
    p.srcPitch = 5 * sizeof(float);
    p.srcXInBytes = 2 * sizeof(float);
    p.srcY = 1;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = d;
    p.dstPitch = 8 * sizeof(float);
    p.WidthInBytes = 3 * sizeof(float);
    p.Height = 4;
    CHECK(cuMemcpy2D(&p));
    memset(&p, 0, sizeof(p));
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = d;
    p.srcPitch = 8 * sizeof(float);
    p.dstMemoryType = CU_MEMORYTYPE_HOST;
    p.dstHost = back;
    p.dstPitch = 3 * sizeof(float);
    p.WidthInBytes = 3 * sizeof(float);
    p.Height = 4;
    CHECK(cuMemcpy2D(&p));
    for (r = 0; r < 4; r++)
        for (c = 0; c < 3; c++)
            assert_true(back[r][c] == host[r + 1][c + 2]);
    /* A pitch narrower than the row is an error. */
    p.srcPitch = 2 * sizeof(float);
    assert_int_equal(cuMemcpy2D(&p), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree(d));
}

static void
test_memsets(void **state)
{
    uint32_t words[16];
    uint16_t halves[16];
    unsigned char bytes[16];
    CUdeviceptr d;
    int i;

    CHECK(cuMemAlloc(&d, 64));
    CHECK(cuMemsetD32(d, 0xdeadbeefu, 16));
    CHECK(cuMemcpyDtoH(words, d, 64));
    for (i = 0; i < 16; i++)
        assert_int_equal(words[i], 0xdeadbeefu);
    CHECK(cuMemsetD16(d + 2, 0x1234, 3));
    CHECK(cuMemcpyDtoH(halves, d, 32));
    assert_int_equal(halves[0], 0xbeef);
    for (i = 1; i <= 3; i++)
        assert_int_equal(halves[i], 0x1234);
    assert_int_equal(halves[4], 0xbeef);
    CHECK(cuMemsetD8(d, 0x5a, 5));
    CHECK(cuMemcpyDtoH(bytes, d, 16));
    for (i = 0; i < 5; i++)
        assert_int_equal(bytes[i], 0x5a);
    assert_int_equal(bytes[5], 0x12);
    /* Misaligned 32-bit memset and one past the end are refused. */
    assert_int_equal(cuMemsetD32(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD32(d, 0, 17), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemFree(d));
}

/* The line the emulator prints, once, for an access with no order. */
#define UNORDERED_LINE "with nothing ordering the two"

/* Producer and consumer on two streams, run as the child "unordered" with
 * stderr in a file: work runs in the order it was queued, whatever stream
 * is waited for, and the first access ordered neither by an event nor by
 * the host is named once. Ordered accesses first, none of them named. */
static void
test_unordered_access_named(void **state)
{
    char text[2048];
    const char *line;
    int rc;

    (void)state;
    rc = run_child_stderr("unordered", NULL, NULL, text, sizeof text);
    if (rc != 0)
        fail_msg("child exit %d, stderr: %s", rc, text);
    line = strstr(text, UNORDERED_LINE);
    assert_non_null(line);
    assert_null(strstr(line + 1, UNORDERED_LINE));  /* said once */
    assert_non_null(strstr(text, "ampshim-emu: memcpy on stream "));
}

static int
child_unordered_reads(CUstream writer, CUstream reader, CUstream other,
                      CUdeviceptr d)
{
    uint32_t seen[8];
    CUevent written;
    int i;

    if (cuEventCreate(&written, CU_EVENT_DISABLE_TIMING))
        return 20;
    /* Ordered by an event. */
    if (cuMemsetD32Async(d, 2, 8, writer) || cuEventRecord(written, writer) ||
        cuStreamWaitEvent(reader, written, 0) ||
        cuMemcpyDtoHAsync(seen, d, sizeof(seen), reader) ||
        cuStreamSynchronize(reader) || seen[0] != 2)
        return 21;
    /* Ordered by an event whose work another stream's wait already ran
     * (queue order): still ordered. */
    if (cuMemsetD32Async(d, 3, 8, writer) || cuEventRecord(written, writer) ||
        cuStreamSynchronize(other) || cuStreamWaitEvent(reader, written, 0) ||
        cuMemcpyDtoHAsync(seen, d, sizeof(seen), reader) ||
        cuStreamSynchronize(reader) || seen[0] != 3)
        return 22;
    /* Ordered by the host waiting for the writer. */
    if (cuMemsetD32Async(d, 4, 8, writer) || cuStreamSynchronize(writer) ||
        cuMemcpyDtoHAsync(seen, d, sizeof(seen), reader) ||
        cuStreamSynchronize(reader) || seen[0] != 4)
        return 23;
    if (cuEventDestroy(written))
        return 24;
    fputs("ordered accesses done\n", stderr);
    /* Unordered: the copy was queued after the memset and runs after it,
     * as on a GPU that keeps up, and the access is named; a second one is
     * not named again. */
    for (int round = 5; round <= 6; round++) {
        if (cuMemsetD32Async(d, (unsigned)round, 8, writer) ||
            cuMemcpyDtoHAsync(seen, d, sizeof(seen), reader) ||
            cuStreamSynchronize(reader))
            return 25;
        for (i = 0; i < 8; i++)
            if (seen[i] != (uint32_t)round)
                return 26;
    }
    return 0;
}

static CUcontext child_bring_up(void);

static int
child_unordered(void)
{
    CUstream writer, reader, other;
    CUdeviceptr d;
    char text[256];
    int rc;

    child_bring_up();
    setvbuf(stderr, NULL, _IONBF, 0);
    if (cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING) ||
        cuStreamCreate(&reader, CU_STREAM_NON_BLOCKING) ||
        cuStreamCreate(&other, CU_STREAM_NON_BLOCKING) ||
        cuMemAlloc(&d, 8 * sizeof(uint32_t)) || cuMemsetD32(d, 1, 8) ||
        cuCtxSynchronize())
        return 10;
    rc = child_unordered_reads(writer, reader, other, d);
    if (rc)
        return rc;
    /* Nothing was named before the unordered access. */
    if (pread(2, text, sizeof text - 1, 0) > 0) {
        text[sizeof text - 1] = '\0';
        if (strstr(text, UNORDERED_LINE) &&
            strstr(text, UNORDERED_LINE) < strstr(text, "ordered accesses"))
            return 30;
    }
    return cuMemFree(d) || cuStreamDestroy(writer) ||
           cuStreamDestroy(reader) || cuStreamDestroy(other) ? 31 : 0;
}

/* A pageable source is staged at the call; the caller may reuse it. */
static void
test_async_copy_stages_pageable_source(void **state)
{
    float src[4] = {1, 2, 3, 4}, back[4];
    CUstream s;
    CUdeviceptr d;

    CHECK(cuStreamCreate(&s, 0));
    CHECK(cuMemAlloc(&d, sizeof(src)));
    CHECK(cuMemcpyHtoDAsync(d, src, sizeof(src), s));
    src[0] = 99.0f;
    CHECK(cuMemcpyDtoHAsync(back, d, sizeof(back), s));
    CHECK(cuStreamSynchronize(s));
    assert_true(back[0] == 1.0f && back[3] == 4.0f);
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(s));
}

static void
test_stream_query_and_flags(void **state)
{
    CUstream s;
    unsigned flags;
    int prio, least, greatest;
    CUdeviceptr d;

    assert_int_equal(cuStreamCreate(&s, 0x8), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuCtxGetStreamPriorityRange(&least, &greatest));
    assert_true(greatest < least);
    CHECK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -100));
    CHECK(cuStreamGetFlags(s, &flags));
    assert_int_equal(flags, CU_STREAM_NON_BLOCKING);
    CHECK(cuStreamGetPriority(s, &prio));
    assert_int_equal(prio, greatest);  /* clamped */
    CHECK(cuStreamQuery(s));
    CHECK(cuMemAlloc(&d, 1 << 20));
    CHECK(cuMemsetD8Async(d, 0, 1 << 20, s));
    /* Queued work is unfinished to the first query; polling ends. */
    assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    CHECK(cuStreamQuery(s));
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(s));
}

/* cuStreamGetId: "the unique Id associated with the stream handle
 * supplied ... unique for the life of the program", for a created stream
 * or a special one (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) (CUDA
 * Driver API, cuStreamGetId; as in
 * https://nvidia.github.io/cuda-python/pr-preview/pr-3095/cuda-bindings/
 * latest/module/generated/driver_v2/cuda.bindings._v2.driver.
 * stream_get_id.html). Streams made one after another where the last was
 * destroyed (the same address, often) never get an id seen before. */
static void
test_stream_ids(void **state)
{
    enum { ROUNDS = 8 };
    unsigned long long ids[ROUNDS + 3], legacy, id;
    CUstream s, last = NULL;
    int n = 0, reused = 0;

    CHECK(cuStreamGetId(NULL, &legacy));
    CHECK(cuStreamGetId(CU_STREAM_LEGACY, &id));
    assert_true(id == legacy);           /* the same stream */
    ids[n++] = legacy;
    CHECK(cuStreamGetId(CU_STREAM_PER_THREAD, &id));
    ids[n++] = id;
    CHECK(cuStreamGetId(CU_STREAM_PER_THREAD, &id));
    assert_true(id == ids[1]);           /* the thread's, again */
    for (int r = 0; r < ROUNDS; r++) {
        CHECK(cuStreamCreate(&s, r % 2 ? CU_STREAM_NON_BLOCKING : 0));
        reused += s == last;
        CHECK(cuStreamGetId(s, &id));
        for (int i = 0; i < n; i++)
            assert_true(id != ids[i]);
        ids[n++] = id;
        /* Stable for the stream's life. */
        CHECK(cuStreamGetId(s, &id));
        assert_true(id == ids[n - 1]);
        CHECK(cuStreamDestroy(s));
        last = s;
    }
    print_message("stream ids: %d of %d streams at a destroyed one's "
                  "address\n", reused, ROUNDS - 1);
    assert_int_equal(cuStreamGetId(NULL, NULL), CUDA_ERROR_INVALID_VALUE);
}

static void
test_stream_ordered_allocation(void **state)
{
    unsigned type;
    CUstream s;
    CUdeviceptr d;
    uint32_t v;

    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAllocAsync(&d, 1024, s));
    CHECK(cuMemsetD32Async(d, 7, 256, s));
    CHECK(cuMemcpyDtoHAsync(&v, d + 1020, 4, s));
    CHECK(cuMemFreeAsync(d, s));
    /* A second free of the same allocation is refused. */
    assert_int_equal(cuMemFreeAsync(d, s), CUDA_ERROR_INVALID_VALUE);
    /* Until the stream reaches the free, the memory is still there. */
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    CHECK(cuStreamSynchronize(s));
    assert_int_equal(v, 7);
    assert_int_equal(cuPointerGetAttribute(&type,
                                           CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAllocAsync(&d, 16, (CUstream)&v),
                     CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuStreamDestroy(s));
}

/* What a stream frees is reused (CUDA's stream-ordered allocator; see
 * docs/emulator.md): once its free has run, the next stream-ordered
 * allocation that fits gets the same block, on any stream, reading as
 * fresh memory (NaN: every byte 0xff), not as what was written there;
 * while kept the block is no allocation. A block more than twice the
 * size asked for is not taken. */
static void
test_stream_ordered_reuse(void **state)
{
    CUstream s, t;
    CUdeviceptr d, e, f;
    uint32_t v[2] = { 0, 0 };
    unsigned type;

    (void)state;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAllocAsync(&d, 1u << 20, s));
    CHECK(cuMemsetD32Async(d, 7, (1u << 20) / 4, s));
    CHECK(cuMemFreeAsync(d, s));
    CHECK(cuStreamSynchronize(s));
    assert_int_equal(cuPointerGetAttribute(&type,
                                           CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d),
                     CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAllocAsync(&e, 1u << 20, t));
    assert_true(e == d);
    CHECK(cuMemcpyDtoHAsync(v, e + (1u << 20) - 8, 8, t));
    CHECK(cuStreamSynchronize(t));
    assert_int_equal(v[0], 0xffffffffu);
    assert_int_equal(v[1], 0xffffffffu);
    CHECK(cuMemFreeAsync(e, t));
    CHECK(cuStreamSynchronize(t));
    /* A quarter of the block: not this one. */
    CHECK(cuMemAllocAsync(&f, 1u << 18, s));
    assert_true(f < d || f >= d + (1u << 20));
    CHECK(cuMemFreeAsync(f, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuStreamDestroy(s));
    CHECK(cuStreamDestroy(t));
}

/* A stream-ordered allocation of 0 bytes succeeds with a NULL pointer
 * and queues nothing (NVIDIA documents no failure for it, unlike
 * cuMemAlloc's; see docs/emulator.md); without a place for the pointer
 * it is still refused. */
static void
test_zero_byte_async_allocation(void **state)
{
    CUstream s;
    CUdeviceptr d = 1;

    (void)state;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAllocAsync(&d, 0, s));
    assert_true(d == 0);
    assert_int_equal(cuMemAllocAsync(NULL, 0, s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAlloc(&d, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuStreamSynchronize(s));
    CHECK(cuStreamDestroy(s));
}

/* cuMemcpyDtoHAsync into pageable memory returns once the copy is done:
 * no synchronisation is needed to read it. */
static void
test_async_copy_to_pageable_is_done_on_return(void **state)
{
    uint32_t seen[64];
    CUstream s;
    CUdeviceptr d;

    (void)state;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&d, sizeof(seen)));
    memset(seen, 0, sizeof(seen));
    CHECK(cuMemsetD32Async(d, 9, 64, s));
    CHECK(cuMemcpyDtoHAsync(seen, d, sizeof(seen), s));
    for (int i = 0; i < 64; i++)
        assert_int_equal(seen[i], 9);
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(s));
}

static void
test_pointer_attributes(void **state)
{
    CUdeviceptr d, start;
    size_t size;
    unsigned type;
    int ordinal;
    CUcontext owner;
    void *pinned;
    int local;

    CHECK(cuMemAlloc(&d, 1000));
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                d + 10));
    assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
    CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                d + 10));
    assert_true(start == d);
    CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d));
    assert_int_equal(size, 1000);
    CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                d));
    assert_int_equal(ordinal, 0);
    CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    assert_ptr_equal(owner, primary);
    /* Host memory the driver never saw. */
    assert_int_equal(cuPointerGetAttribute(
                         &type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                         (CUdeviceptr)(uintptr_t)&local),
                     CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemAllocHost(&pinned, 64));
    CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                (CUdeviceptr)(uintptr_t)pinned));
    assert_int_equal(type, CU_MEMORYTYPE_HOST);
    CHECK(cuMemFreeHost(pinned));
    CHECK(cuMemFree(d));
}

/* Events: the elapsed time between two records is the modelled duration
 * of the work between them. */
static void
test_events_time_the_model(void **state)
{
    const size_t bytes = 64u << 20;
    CUevent a, b, untimed, never;
    CUdeviceptr d;
    CUstream s;
    float ms;
    double want;

    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&d, bytes));
    CHECK(cuEventCreate(&a, 0));
    CHECK(cuEventCreate(&b, 0));
    CHECK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&never, 0));
    assert_int_equal(cuEventCreate(&never, 0x80), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuEventRecord(a, s));
    CHECK(cuMemsetD8Async(d, 0, bytes, s));
    CHECK(cuMemsetD8Async(d, 1, bytes, s));
    CHECK(cuEventRecord(b, s));
    CHECK(cuEventRecord(untimed, s));
    assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    assert_int_equal(cuEventQuery(b), CUDA_ERROR_NOT_READY);
    CHECK(cuEventQuery(b));
    CHECK(cuEventSynchronize(b));
    CHECK(cuEventElapsedTime(&ms, a, b));
    want = 2.0 * emu_model_ns(0.0, EMU_PREC_NONE, (double)bytes) / 1e6;
    /* b's record holds the stream up too (emu_event_record_ns) */
    assert_true(fabs(ms - emu_event_record_ns() / 1e6 - want) <=
                1e-3 * want);
    /* Bytes over bandwidth, at the table's achievable share. */
    assert_true(want > 2.0 * (double)bytes /
                           (emu_gpu()->bandwidth_tbs * 1e12) * 1e3);
    assert_int_equal(cuEventElapsedTime(&ms, a, untimed),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuEventElapsedTime(&ms, a, never),
                     CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuEventQuery(never));     /* never recorded: complete */
    CHECK(cuEventDestroy(a));
    CHECK(cuEventDestroy(b));
    CHECK(cuEventDestroy(untimed));
    CHECK(cuEventDestroy(never));
    assert_int_equal(cuEventDestroy(a), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(s));
}

/* The legacy stream waits for blocking streams and they wait for it;
 * non-blocking streams are independent of it. */
static void
test_legacy_stream_ordering(void **state)
{
    CUstream blocking;
    uint32_t v;
    CUdeviceptr d;

    CHECK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CHECK(cuMemAlloc(&d, 4));
    CHECK(cuMemsetD32Async(d, 5, 1, blocking));
    /* The synchronous copy runs on the legacy stream, after the memset. */
    CHECK(cuMemcpyDtoH(&v, d, 4));
    assert_int_equal(v, 5);
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(blocking));
}

/* Loading a module during a global capture is illegal and invalidates
 * the capture; a relaxed capture allows it. fake_fatbin holds an image. */
static void
module_load_under_capture(void)
{
    CUstreamCaptureStatus st;
    CUgraph graph;
    CUmodule m;
    CUstream s;

    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cuModuleLoadData(&m, fake_fatbin),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cuStreamEndCapture(s, &graph),
                     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuModuleLoadData(&m, fake_fatbin));
    CHECK(cuStreamEndCapture(s, &graph));
    CHECK(cuGraphDestroy(graph));
    CHECK(cuModuleUnload(m));
    CHECK(cuStreamDestroy(s));
}

/* A thread's capture interaction mode (cuThreadExchangeStreamCaptureMode)
 * decides which captures prohibit its potentially unsafe calls (here
 * cuMemAlloc): GLOBAL, its own and any global one; THREAD_LOCAL, its own
 * only; RELAXED, none. A prohibited call fails and invalidates. */
struct mode_probe {
    CUstreamCaptureMode mode;
    CUresult alloc;
};

static void *
mode_probe_run(void *arg)
{
    struct mode_probe *p = arg;
    CUstreamCaptureMode old = p->mode;
    CUdeviceptr d = 0;

    if (cuCtxSetCurrent(primary) != CUDA_SUCCESS ||
        cuThreadExchangeStreamCaptureMode(&old) != CUDA_SUCCESS)
        return NULL;
    p->alloc = cuMemAlloc(&d, 4);
    if (p->alloc == CUDA_SUCCESS)
        cuMemFree(d);
    return NULL;
}

/* Begins a global capture on s, runs an allocation in `mode` on another
 * thread, ends the capture; returns the allocation's status, and in *end
 * the end's. */
static CUresult
alloc_beside_capture(CUstream s, CUstreamCaptureMode mode, CUresult *end)
{
    struct mode_probe p = {mode, CUDA_ERROR_UNKNOWN};
    CUgraph graph = NULL;
    pthread_t t;

    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(pthread_create(&t, NULL, mode_probe_run, &p), 0);
    pthread_join(t, NULL);
    *end = cuStreamEndCapture(s, &graph);
    if (graph)
        cuGraphDestroy(graph);
    return p.alloc;
}

static void
test_capture_thread_modes(void **state)
{
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUgraph graph = NULL;
    CUdeviceptr d = 0;
    CUresult end;
    CUstream s;

    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    /* Another thread's global capture. */
    assert_int_equal(alloc_beside_capture(s, CU_STREAM_CAPTURE_MODE_GLOBAL,
                                          &end),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(alloc_beside_capture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                               &end));
    CHECK(end);
    CHECK(alloc_beside_capture(s, CU_STREAM_CAPTURE_MODE_RELAXED, &end));
    CHECK(end);
    /* The thread's own capture: only RELAXED allows the call. */
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuThreadExchangeStreamCaptureMode(&mode));
    assert_int_equal(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CHECK(cuMemAlloc(&d, 4));
    mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
    CHECK(cuThreadExchangeStreamCaptureMode(&mode));
    assert_int_equal(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
    assert_int_equal(cuMemFree(d), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamEndCapture(s, &graph),
                     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    CHECK(cuThreadExchangeStreamCaptureMode(&mode));
    CHECK(cuMemFree(d));
    mode = (CUstreamCaptureMode)7;
    assert_int_equal(cuThreadExchangeStreamCaptureMode(&mode),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuThreadExchangeStreamCaptureMode(NULL),
                     CUDA_ERROR_INVALID_VALUE);
    CHECK(cuStreamDestroy(s));
}

/* A graph of one memset of `value` into d (n memsets when n > 1),
 * captured on s. */
static CUgraph
captured_memsets(CUstream s, CUdeviceptr d, uint32_t value, int n)
{
    CUgraph graph = NULL;

    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < n; i++)
        CHECK(cuMemsetD32Async(d, value, 1, s));
    CHECK(cuStreamEndCapture(s, &graph));
    return graph;
}

/* cuGraphInstantiateWithParams and cuGraphExecUpdate (cuda.h): the
 * parameters' result; an update with a topologically identical graph
 * makes the executable launch the new graph's parameters, one with
 * another count of nodes or another node type fails with
 * CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE and says why, the executable
 * unchanged. */
/* cuGraphClone (cuda.h): a copy of the graph as it is, with its own
 * nodes, launched on its own after the original is gone; one with a
 * memory allocation node is not cloned. cuGraphLaunch_ptsz: stream 0 is
 * the calling thread's stream. */
static void
test_graph_clone(void **state)
{
    CUgraph first, clone, with_alloc, none = NULL;
    CUgraphNode nodes[4];
    CUgraphExec exec;
    CUdeviceptr d, p;
    size_t n = 4;
    CUstream s;
    uint32_t v = 0;

    (void)state;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&d, 4));
    first = captured_memsets(s, d, 9, 2);
    CHECK(cuGraphClone(&clone, first));
    CHECK(cuGraphGetNodes(clone, nodes, &n));
    assert_int_equal(n, 2);
    CHECK(cuGraphDestroy(first));
    CHECK(cuGraphInstantiateWithFlags(&exec, clone, 0));
    CHECK(cuGraphLaunch_ptsz(exec, NULL));
    CHECK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    CHECK(cuMemcpyDtoH(&v, d, 4));
    assert_int_equal(v, 9);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(clone));
    assert_int_equal(cuGraphClone(NULL, clone), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuGraphClone(&clone, none), CUDA_ERROR_INVALID_VALUE);

    /* A capture's allocation and free are memory nodes. */
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemAllocAsync(&p, 256, s));
    CHECK(cuMemFreeAsync(p, s));
    CHECK(cuStreamEndCapture(s, &with_alloc));
    assert_int_equal(cuGraphClone(&clone, with_alloc),
                     CUDA_ERROR_NOT_SUPPORTED);
    CHECK(cuGraphDestroy(with_alloc));
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(s));
}

static void
test_graph_update(void **state)
{
    CUDA_GRAPH_INSTANTIATE_PARAMS params;
    CUgraphExecUpdateResultInfo info;
    CUgraph first, second, longer, other;
    CUgraphExec exec;
    CUdeviceptr d;
    CUstream s;
    uint32_t v = 0;

    (void)state;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&d, 4));
    first = captured_memsets(s, d, 5, 1);
    second = captured_memsets(s, d, 7, 1);
    longer = captured_memsets(s, d, 7, 2);
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemcpyHtoDAsync(d, &v, 4, s));
    CHECK(cuStreamEndCapture(s, &other));
    memset(&params, 0xff, sizeof params);
    params.flags = 0;
    params.hUploadStream = NULL;
    CHECK(cuGraphInstantiateWithParams(&exec, first, &params));
    assert_int_equal(params.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    assert_null(params.hErrNode_out);
    CHECK(cuGraphLaunch(exec, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(&v, d, 4));
    assert_int_equal(v, 5);

    assert_int_equal(cuGraphExecUpdate(exec, longer, &info),
                     CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    assert_null(info.errorNode);
    assert_int_equal(cuGraphExecUpdate(exec, other, &info),
                     CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
    assert_non_null(info.errorNode);
    assert_int_equal(cuGraphExecUpdate(exec, second, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMemsetD32(d, 0, 1));
    CHECK(cuGraphLaunch(exec, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(&v, d, 4));
    assert_int_equal(v, 5);

    CHECK(cuGraphExecUpdate(exec, second, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    /* The graph the update came from may go: the executable keeps it. */
    CHECK(cuGraphDestroy(second));
    CHECK(cuGraphLaunch(exec, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(&v, d, 4));
    assert_int_equal(v, 7);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(first));
    CHECK(cuGraphDestroy(longer));
    CHECK(cuGraphDestroy(other));
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(s));
}

static void
test_capture(void **state)
{
    CUstreamCaptureStatus st;
    CUgraphExec exec;
    CUgraph graph;
    cuuint64_t id;
    CUdeviceptr d, extra;
    CUstream s;
    uint32_t v = 0;

    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&d, 4));
    CHECK(cuMemsetD32(d, 1, 1));
    assert_int_equal(cuStreamBeginCapture(CU_STREAM_LEGACY,
                                          CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_ILLEGAL_STATE);
    CHECK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK(cuStreamGetCaptureInfo(s, &st, &id, NULL, NULL, NULL, NULL));
    assert_true(id != 0);
    CHECK(cuMemsetD32Async(d, 9, 1, s));
    CHECK(cuStreamEndCapture(s, &graph));
    CHECK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    /* Captured work did not run. */
    CHECK(cuMemcpyDtoH(&v, d, 4));
    assert_int_equal(v, 1);
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    CHECK(cuGraphLaunch(exec, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH(&v, d, 4));
    assert_int_equal(v, 9);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));

    /* A synchronous allocation during a global capture is illegal and
     * invalidates the capture. */
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    assert_int_equal(cuMemAlloc(&extra, 16),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cuMemsetD32Async(d, 3, 1, s),
                     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(cuStreamEndCapture(s, &graph),
                     CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(graph);
    /* So is querying or waiting for an event recorded before it. */
    {
        CUevent ev;

        CHECK(cuEventCreate(&ev, CU_EVENT_DEFAULT));
        CHECK(cuEventRecord(ev, s));
        CHECK(cuStreamSynchronize(s));
        CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_int_equal(cuEventQuery(ev),
                         CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_int_equal(cuStreamEndCapture(s, &graph),
                         CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        assert_int_equal(cuEventSynchronize(ev),
                         CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        assert_int_equal(cuStreamEndCapture(s, &graph),
                         CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        CHECK(cuEventQuery(ev));
        CHECK(cuEventDestroy(ev));
    }
    /* In relaxed mode the same allocation is allowed. */
    CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuMemAlloc(&extra, 16));
    CHECK(cuStreamEndCapture(s, &graph));
    CHECK(cuGraphDestroy(graph));
    CHECK(cuMemFree(extra));
    assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_ERROR_ILLEGAL_STATE);
    CHECK(cuMemFree(d));
    CHECK(cuStreamDestroy(s));
}

static void
test_errors(void **state)
{
    const char *s;

    CHECK(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &s));
    assert_string_equal(s, "CUDA_ERROR_INVALID_VALUE");
    CHECK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
    assert_string_equal(s, "out of memory");
    assert_int_equal(cuGetErrorName((CUresult)9999, &s),
                     CUDA_ERROR_INVALID_VALUE);
    assert_null(s);
}

/* The shim's absmax kernel, launched by name through a module, against a
 * host loop. */
static void
test_module_and_launch(void **state)
{
    float host[300];
    uint32_t got, want = 0;
    int64_t ld = 20, rows = 15, cols = 15;
    CUdeviceptr src, absmax;
    CUfunction f, other;
    CUmodule m;
    void *params[] = {&src, &ld, &rows, &cols, &absmax};
    int i, j;

    assert_int_equal(cuModuleLoadData(&m, "not an image"),
                     CUDA_ERROR_INVALID_IMAGE);
    make_fatbin(AMP_K_ABSMAX_F32);
    CHECK(cuModuleLoadData(&m, fake_fatbin));
    CHECK(cuModuleGetFunction(&f, m, AMP_K_ABSMAX_F32));
    /* Known to the emulator, but not in this image. */
    assert_int_equal(cuModuleGetFunction(&other, m, AMP_K_CAST_F32_F16),
                     CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cuModuleGetFunction(&other, m, "no_such_kernel"),
                     CUDA_ERROR_NOT_FOUND);

    for (i = 0; i < 300; i++)
        host[i] = sinf((float)i) * (float)i;
    host[299] = -1e6f;   /* outside the 15x15 window of ld 20: ignored */
    for (j = 0; j < cols; j++)
        for (i = 0; i < rows; i++) {
            uint32_t bits = amp_f32_bits(fabsf(host[j * ld + i]));

            if (bits > want)
                want = bits;
        }
    CHECK(cuMemAlloc(&src, sizeof(host)));
    CHECK(cuMemAlloc(&absmax, 4));
    CHECK(cuMemcpyHtoD(src, host, sizeof(host)));
    CHECK(cuMemsetD32(absmax, 0, 1));
    assert_int_equal(cuLaunchKernel(f, 4, 1, 1, 2048, 1, 1, 0, NULL, params,
                                    NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(f, 0, 1, 1, 256, 1, 1, 0, NULL, params,
                                    NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 1 << 20, NULL,
                                    params, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CHECK(cuMemcpyDtoH(&got, absmax, 4));
    assert_int_equal(got, want);
    CHECK(cuModuleUnload(m));
    assert_int_equal(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, params,
                                    NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuMemFree(src));
    CHECK(cuMemFree(absmax));
    module_load_under_capture();
}

/* A kernel of the shim is charged the bytes it reads and writes: the
 * FP16 cast of a compact matrix reads its FP32 elements and the scale and
 * writes the halves, each once; and a second launch over the same memory,
 * run in the same synchronisation (its pages left open by the first), is
 * charged them again. */
static void
test_kernel_time_is_its_bytes(void **state)
{
    int64_t rows = 256, cols = 192, ld = 256;
    size_t n = (size_t)rows * (size_t)cols;
    CUdeviceptr src, dst, scale;
    void *params[] = {&src, &ld, &dst, &ld, &rows, &cols, &scale};
    float one = 1.0f, ms, again;
    double want;
    CUevent a, b, c;
    CUfunction f;
    CUmodule m;
    CUstream s;

    make_fatbin(AMP_K_CAST_F32_F16);
    CHECK(cuModuleLoadData(&m, fake_fatbin));
    CHECK(cuModuleGetFunction(&f, m, AMP_K_CAST_F32_F16));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAlloc(&src, n * 4));
    CHECK(cuMemAlloc(&dst, n * 2));
    CHECK(cuMemAlloc(&scale, 4));
    CHECK(cuMemsetD32(src, 0x3f800000u, n));
    CHECK(cuMemcpyHtoD(scale, &one, 4));
    CHECK(cuEventCreate(&a, 0));
    CHECK(cuEventCreate(&b, 0));
    CHECK(cuEventCreate(&c, 0));
    CHECK(cuEventRecord(a, s));
    CHECK(cuLaunchKernel(f,
                         amp_kernel_grid((long long)n, AMP_KERNEL_MAX_GRID),
                         1, 1, AMP_KERNEL_BLOCK, 1, 1, 0, s, params, NULL));
    CHECK(cuEventRecord(b, s));
    CHECK(cuLaunchKernel(f,
                         amp_kernel_grid((long long)n, AMP_KERNEL_MAX_GRID),
                         1, 1, AMP_KERNEL_BLOCK, 1, 1, 0, s, params, NULL));
    CHECK(cuEventRecord(c, s));
    CHECK(cuEventSynchronize(c));
    CHECK(cuEventElapsedTime(&ms, a, b));
    CHECK(cuEventElapsedTime(&again, b, c));
    want = (emu_model_ns(0.0, EMU_PREC_NONE, (double)(n * 4 + n * 2 + 4)) +
            emu_event_record_ns()) /
           1e6;
    assert_true(fabs(ms - want) <= 1e-4 * want);
    assert_true(fabs(again - want) <= 1e-4 * want);
    CHECK(cuEventDestroy(a));
    CHECK(cuEventDestroy(b));
    CHECK(cuEventDestroy(c));
    CHECK(cuMemFree(src));
    CHECK(cuMemFree(dst));
    CHECK(cuMemFree(scale));
    CHECK(cuStreamDestroy(s));
    CHECK(cuModuleUnload(m));
}

/* The occupancy calculator's answer for k on the H100 model (2048 threads,
 * 32 blocks and 233472 bytes of shared memory per multiprocessor, 65536
 * registers), from the registers and shared memory ptxas reported. */
static int
h100_blocks(const struct emu_kernel *k, int block, size_t dynamic)
{
    int registers, shared, warps = (block + 31) / 32, blocks, by_regs;
    size_t smem;

    emu_kernel_resources(k, &registers, &shared);
    blocks = 2048 / 32 / warps;
    blocks = blocks < 32 ? blocks : 32;
    by_regs = 65536 / ((registers * 32 + 255) / 256 * 256) / warps;
    blocks = by_regs < blocks ? by_regs : blocks;
    smem = ((size_t)shared + dynamic + 1024 + 127) / 128 * 128;
    return 233472 / smem < (size_t)blocks ? (int)(233472 / smem) : blocks;
}

/* cuOccupancyMaxActiveBlocksPerMultiprocessor answers from the kernel's
 * registers and shared memory (ptxas's, kept by the build) and the
 * modelled multiprocessor's limits; it refuses what the driver refuses. */
static void
test_occupancy(void **state)
{
    const struct emu_kernel *k = emu_kernel_find(AMP_K_CONV_ERROR);
    int registers = 0, shared = 0, n = -1;
    CUfunction f;
    CUmodule m;

    (void)state;
    assert_non_null(k);
    emu_kernel_resources(k, &registers, &shared);
    /* The build's report names the kernel: a reduction with shared
     * memory, at most 64 registers (kernel_resources). */
    assert_true(registers > 32 && registers <= 64);
    assert_true(shared > 0);
    make_fatbin(AMP_K_CONV_ERROR);
    CHECK(cuModuleLoadData(&m, fake_fatbin));
    CHECK(cuModuleGetFunction(&f, m, AMP_K_CONV_ERROR));
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 256, 0));
    assert_int_equal(n, h100_blocks(k, 256, 0));
    /* Over 32 registers a thread, 256-thread blocks are register-bound
     * below the 8 that the threads allow. */
    assert_true(n >= 4 && n < 8);
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 1024, 0));
    assert_int_equal(n, 1);
    CHECK(cuModuleUnload(m));
    /* Every kernel, by the rule: registers in units of 256 a warp (50
     * registers take 1792 a warp, 4 blocks of 256 threads, not 5). */
    for (const struct emu_kernel *e = emu_kernels; e->name; e++) {
        make_fatbin(e->name);
        CHECK(cuModuleLoadData(&m, fake_fatbin));
        CHECK(cuModuleGetFunction(&f, m, e->name));
        CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 256, 0));
        if (n != h100_blocks(e, 256, 0))
            fail_msg("%s: %d blocks, the rule says %d", e->name, n,
                     h100_blocks(e, 256, 0));
        CHECK(cuModuleUnload(m));
    }
    make_fatbin(AMP_K_CONV_ERROR);
    CHECK(cuModuleLoadData(&m, fake_fatbin));
    CHECK(cuModuleGetFunction(&f, m, AMP_K_CONV_ERROR));
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        &n, f, 64, 100000, CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
    assert_int_equal(n, h100_blocks(k, 64, 100000));
    assert_int_equal(n, 2);
    CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 256, 240000));
    assert_int_equal(n, 0);
    assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(NULL, f,
                                                                 256, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 0, 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, 1025,
                                                                 0),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                         &n, (CUfunction)&n, 256, 0),
                     CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuModuleUnload(m));
}

/* A child that launches the FP16 cast of test_kernel_time_is_its_bytes
 * twice, for AMPSHIM_EMU_KERNEL_STATS to count at its exit. */
static int
child_stats(void)
{
    int64_t rows = 256, cols = 192, ld = 256;
    size_t n = (size_t)rows * (size_t)cols;
    CUdeviceptr src, dst, scale;
    void *params[] = {&src, &ld, &dst, &ld, &rows, &cols, &scale};
    float one = 1.0f;
    CUcontext c;
    CUfunction f;
    CUmodule m;

    make_fatbin(AMP_K_CAST_F32_F16);
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c) ||
        cuModuleLoadData(&m, fake_fatbin) ||
        cuModuleGetFunction(&f, m, AMP_K_CAST_F32_F16) ||
        cuMemAlloc(&src, n * 4) || cuMemAlloc(&dst, n * 2) ||
        cuMemAlloc(&scale, 4) || cuMemsetD32(src, 0x3f800000u, n) ||
        cuMemcpyHtoD(scale, &one, 4))
        return 50;
    for (int i = 0; i < 2; i++)
        if (cuLaunchKernel(f,
                           amp_kernel_grid((long long)n, AMP_KERNEL_MAX_GRID),
                           1, 1, AMP_KERNEL_BLOCK, 1, 1, 0, NULL, params,
                           NULL))
            return 51;
    return cuCtxSynchronize() ? 52 : 0;
}

/* AMPSHIM_EMU_KERNEL_STATS=1: at exit, per kernel, its launches and the
 * bytes they were charged (the benchmarks' byte counts), the threads the
 * two launches ran, and the model's rates. */
static void
test_kernel_stats(void **state)
{
    char text[4096], want[160];
    size_t n = 256 * 192;
    const char *line, *end;

    (void)state;
    assert_int_equal(run_child_stderr("stats", "AMPSHIM_EMU_KERNEL_STATS",
                                      "1", text, sizeof text), 0);
    snprintf(want, sizeof want,
             "ampshim-emu: kernel %s launches=2 bytes=%zu ",
             AMP_K_CAST_F32_F16, 2 * (n * 4 + n * 2 + 4));
    line = strstr(text, want);
    assert_non_null(line);
    end = strchr(line, '\n');
    assert_non_null(end);
    snprintf(want, sizeof want, " threads=%u\n",
             2 * AMP_KERNEL_BLOCK *
                 amp_kernel_grid((long long)n, AMP_KERNEL_MAX_GRID));
    assert_true((size_t)(end + 1 - line) > strlen(want));
    assert_memory_equal(end + 1 - strlen(want), want, strlen(want));
    assert_non_null(strstr(text, "ampshim-emu: model h100 fp16_tflops="));
}

/* Under a file size limit below the smallest device memory (a memory
 * file), cuInit fails with CUDA_ERROR_OUT_OF_MEMORY and says why; the
 * process is not ended by SIGXFSZ. Exit 0 when so. */
static int
child_fsize(void)
{
    struct rlimit small = {1 << 20, 1 << 20};

    if (setrlimit(RLIMIT_FSIZE, &small) != 0)
        return 60;
    return cuInit(0) == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 61;
}

static void
test_file_size_limit(void **state)
{
    char text[2048];

    (void)state;
    assert_int_equal(run_child_stderr("fsize", NULL, NULL, text,
                                      sizeof text), 0);
    assert_non_null(strstr(text, "ampshim-emu: cannot reserve device "
                                 "memory"));
    assert_non_null(strstr(text, "ulimit -f"));
}

/* AMPSHIM_EMU_BEHIND, AMPSHIM_EMU_NOISE, AMPSHIM_EMU_MEMORY: the device
 * behind the host, noisy times, a smaller memory (child_pace). */
static void
test_device_behind(void **state)
{
    (void)state;
    assert_int_equal(run_child("behind", "AMPSHIM_EMU_BEHIND", "4"), 0);
    assert_int_equal(run_child("noise", "AMPSHIM_EMU_NOISE", "0.3:7"), 0);
    assert_int_equal(run_child("memory", "AMPSHIM_EMU_MEMORY", "64M"), 0);
}

/* ---- Scenarios run in a fresh child process -------------------------------- */

static CUcontext
child_bring_up(void)
{
    CUcontext c = NULL;

    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&c, 0) ||
        cuCtxSetCurrent(c))
        exit(10);
    return c;
}

/* The FP32 absolute-maximum kernel, from a module of its own, into *f: 0,
 * or non-zero when it cannot be had. */
static int
child_absmax_kernel(CUfunction *f)
{
    CUmodule m;

    make_fatbin(AMP_K_ABSMAX_F32);
    return cuModuleLoadData(&m, fake_fatbin) != CUDA_SUCCESS ||
           cuModuleGetFunction(f, m, AMP_K_ABSMAX_F32) != CUDA_SUCCESS;
}

/* cuCtxGetId: "the unique Id associated with the context supplied ...
 * unique for the life of the program", the current context's for NULL
 * (CUDA Driver API, cuCtxGetId; as in
 * https://nvidia.github.io/cuda-python/pr-preview/pr-3095/cuda-bindings/
 * latest/module/generated/driver_v2/cuda.bindings._v2.driver.
 * ctx_get_id.html). A primary context reset and retained again comes back
 * at the same address (its handle) but is another context: another id;
 * a created context has its own. In a child: the reset ends the primary
 * context the other tests share. */
static int
child_ctx_ids(void)
{
    CUcontext first = child_bring_up(), again = NULL, own = NULL, popped;
    unsigned long long id = 0, id_null = 0, id_again = 0, id_own = 0, x;

    if (cuCtxGetId(first, &id) || cuCtxGetId(NULL, &id_null) || !id ||
        id_null != id)
        return 40;
    if (cuCtxGetId(first, &x) || x != id)
        return 41; /* stable for the context's life */
    if (cuCtxCreate(&own, NULL, 0, 0) || cuCtxGetId(own, &id_own) ||
        id_own == id || cuCtxPopCurrent(&popped) || popped != own ||
        cuCtxDestroy(own))
        return 42;
    if (cuDevicePrimaryCtxReset(0))
        return 43;
    /* Ended: no id until it is made again. */
    if (cuCtxGetId(first, &x) != CUDA_ERROR_CONTEXT_IS_DESTROYED)
        return 44;
    if (cuDevicePrimaryCtxRetain(&again, 0) || cuCtxSetCurrent(again))
        return 45;
    if (again != first)
        return 46; /* the emulator's primary context keeps its address */
    if (cuCtxGetId(again, &id_again) || cuCtxGetId(NULL, &x) ||
        x != id_again)
        return 47;
    if (id_again == id || id_again == id_own)
        return 48;
    if (cuCtxGetId(NULL, NULL) != CUDA_ERROR_INVALID_VALUE)
        return 49;
    return 0;
}

/* The host dereferences a device pointer: SIGSEGV, as on a GPU system. */
static int
child_host_read(void)
{
    volatile float *p;
    CUdeviceptr d;

    child_bring_up();
    if (cuMemAlloc(&d, 64))
        return 11;
    /* The kernel's own SIGSEGV, also in a sanitized build (whose handler
     * would report the fault and exit 1). */
    signal(SIGSEGV, SIG_DFL);
    p = (volatile float *)(uintptr_t)d;
    return p[0] == 0.0f ? 12 : 13;  /* never reached */
}

/* The host reads a kernel's result at its device address, the
 * synchronisation that ran the kernel done: SIGSEGV, as on a GPU system.
 * The pages the kernels opened close when the emulator's call returns. */
static int
child_host_read_after_kernel(void)
{
    volatile uint32_t *p;
    CUdeviceptr a, b;
    CUfunction f;
    int64_t ld = 1024, rows = 1024, cols = 1;
    void *params[] = {&a, &ld, &rows, &cols, &b};

    child_bring_up();
    if (cuMemAlloc(&a, 4096) || cuMemAlloc(&b, 4) ||
        cuMemsetD32(a, 0x3f800000u, 1024) || cuMemsetD32(b, 0, 1) ||
        child_absmax_kernel(&f))
        return 11;
    if (cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL) ||
        cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL) ||
        cuCtxSynchronize())
        return 12;
    signal(SIGSEGV, SIG_DFL);
    p = (volatile uint32_t *)(uintptr_t)b;
    return p[0] == 0x3f800000u ? 13 : 14;   /* never reached */
}

/* A kernel queued after a stream-ordered free of its input faults, though
 * it runs in the same synchronisation as a kernel that read the input
 * before the free: the first one's open pages are not the second's. */
static int
child_freed_in_one_sync(void)
{
    CUdeviceptr a, b;
    CUfunction f;
    CUstream s;
    int64_t ld = 1024, rows = 1024, cols = 1;
    void *params[] = {&a, &ld, &rows, &cols, &b};

    child_bring_up();
    if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) ||
        cuMemAllocAsync(&a, 4096, s) || cuMemAlloc(&b, 4) ||
        child_absmax_kernel(&f))
        return 40;
    if (cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, s, params, NULL) ||
        cuMemFreeAsync(a, s) ||
        cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, s, params, NULL))
        return 41;
    if (cuStreamSynchronize(s) != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 42;
    return 0;
}

/* AMPSHIM_EMU_FAIL=alloc:2,alloc-async:1,module:1,launch:2,event:1 */
static int
child_faults(void)
{
    CUdeviceptr a, b;
    CUmodule m;
    CUfunction f;
    CUevent e;
    int64_t one = 1;
    void *params[] = {&a, &one, &one, &one, &b};

    child_bring_up();
    if (cuMemAlloc(&a, 64) != CUDA_SUCCESS)
        return 20;
    if (cuMemAlloc(&b, 64) != CUDA_ERROR_OUT_OF_MEMORY)
        return 21;
    if (cuMemAlloc(&b, 64) != CUDA_SUCCESS)
        return 22;
    if (cuMemAllocAsync(&b, 64, NULL) != CUDA_ERROR_OUT_OF_MEMORY)
        return 23;
    make_fatbin(AMP_K_ABSMAX_F32);
    if (cuModuleLoadData(&m, fake_fatbin) != CUDA_ERROR_NO_BINARY_FOR_GPU)
        return 24;
    if (cuModuleLoadData(&m, fake_fatbin) != CUDA_SUCCESS ||
        cuModuleGetFunction(&f, m, AMP_K_ABSMAX_F32) != CUDA_SUCCESS)
        return 25;
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) !=
        CUDA_SUCCESS)
        return 26;
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) !=
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
        return 27;
    if (cuEventCreate(&e, 0) != CUDA_ERROR_OUT_OF_MEMORY ||
        cuEventCreate(&e, 0) != CUDA_SUCCESS)
        return 28;
    /* An injected launch failure is not sticky: the context still works. */
    if (cuCtxSynchronize() != CUDA_SUCCESS)
        return 29;
    return 0;
}

/* A kernel that reads outside its allocation makes the context's error
 * sticky: later calls return it. */
static int
child_sticky(void)
{
    CUdeviceptr a, b;
    CUfunction f;
    int64_t ld = 1000, rows = 1000, cols = 1;
    void *params[] = {&a, &ld, &rows, &cols, &b};

    child_bring_up();
    if (cuMemAlloc(&a, 64) || cuMemAlloc(&b, 4) || child_absmax_kernel(&f))
        return 30;
    /* The launch is accepted: the fault happens on the device. */
    if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL))
        return 31;
    if (cuCtxSynchronize() != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 32;
    if (cuMemAlloc(&a, 64) != CUDA_ERROR_ILLEGAL_ADDRESS)
        return 33;
    return 0;
}

static void
test_ctx_ids(void **state)
{
    assert_int_equal(run_child("ctx-ids", NULL, NULL), 0);
}

static void
test_host_read_of_device_memory_faults(void **state)
{
    assert_int_equal(run_child("host-read", NULL, NULL), 128 + SIGSEGV);
    assert_int_equal(run_child("host-read-after-kernel", NULL, NULL),
                     128 + SIGSEGV);
    assert_int_equal(run_child("host-read-after-kernel", "AMPSHIM_EMU_WINDOW",
                               "faults"),
                     128 + SIGSEGV);
}

static void
test_freed_memory_faults_in_one_sync(void **state)
{
    assert_int_equal(run_child("freed-in-one-sync", NULL, NULL), 0);
    assert_int_equal(run_child("freed-in-one-sync", "AMPSHIM_EMU_WINDOW",
                               "faults"),
                     0);
}

static void
test_fault_injection(void **state)
{
    assert_int_equal(run_child("faults", "AMPSHIM_EMU_FAIL",
                               "alloc:2,alloc-async:1,module:1,launch:2,"
                               "event:1"),
                     0);
}

static void
test_sticky_error(void **state)
{
    assert_int_equal(run_child("sticky", NULL, NULL), 0);
}

/* What the driver reports for each modelled GPU (tests/emu/model.c names
 * the sources): name, memory, compute capability, SMs, L2, shared memory
 * per SM and per block, and the published bandwidth and launch latency a
 * device-to-device copy is timed with. */
struct model_want {
    const char *key;
    const char *name;
    double mem_gib;
    int cc_major, cc_minor, sm_count, l2_bytes, smem_sm, smem_block;
    double bandwidth_tbs, launch_us;
};

static const struct model_want model_wants[] = {
    { "h100", "NVIDIA H100 SXM (emulated)", 80, 9, 0, 132, 50 << 20,
      233472, 232448, 3.35, 1.2 },
    { "h200", "NVIDIA H200 (emulated)", 141, 9, 0, 132, 60 << 20, 233472,
      232448, 4.8, 1.2 },
    { "b200", "NVIDIA B200 (emulated)", 180, 10, 0, 148, 132644864,
      233472, 232448, 7.7, 1.2 },
    { "a100", "NVIDIA A100 SXM 80GB (emulated)", 80, 8, 0, 108, 40 << 20,
      167936, 166912, 2.04, 3.0 },
    { "v100", "Tesla V100-SXM2-32GB (emulated)", 32, 7, 0, 80, 6 << 20,
      98304, 98304, 0.9, 3.0 },
    { "t4", "Tesla T4 (emulated)", 16, 7, 5, 40, 4 << 20, 65536, 65536,
      0.32, 3.0 },
};

static int
attribute_is(CUdevice_attribute attr, int want)
{
    int v = -1;

    return cuDeviceGetAttribute(&v, attr, 0) == CUDA_SUCCESS && v == want;
}

/* In a child with AMPSHIM_EMU_GPU set: the device is the GPU it names, and
 * a 64 MiB device-to-device copy between events takes its bytes, read and
 * written, over 0.85 of the published bandwidth plus one launch. */
static int
child_model(void)
{
    const char *key = getenv("AMPSHIM_EMU_GPU");
    const struct model_want *w = NULL;
    size_t bytes = (size_t)64 << 20, total = 0;
    char name[256];
    CUdeviceptr a, b;
    CUevent e0, e1;
    float ms;
    double want;

    for (size_t i = 0; i < sizeof(model_wants) / sizeof(model_wants[0]); i++)
        if (key && strcmp(key, model_wants[i].key) == 0)
            w = &model_wants[i];
    if (!w)
        return 40;
    if (cuInit(0) || cuDeviceGetName(name, sizeof(name), 0) ||
        strcmp(name, w->name) != 0)
        return 41;
    if (cuDeviceTotalMem(&total, 0) ||
        total != (size_t)(w->mem_gib * 1024 * 1024 * 1024))
        return 42;
    if (!attribute_is(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                      w->cc_major) ||
        !attribute_is(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                      w->cc_minor))
        return 43;
    if (!attribute_is(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, w->sm_count))
        return 44;
    if (!attribute_is(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, w->l2_bytes) ||
        !attribute_is(
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
            w->smem_sm) ||
        !attribute_is(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                      w->smem_block))
        return 45;
    child_bring_up();
    if (cuMemAlloc(&a, bytes) || cuMemAlloc(&b, bytes) ||
        cuEventCreate(&e0, 0) || cuEventCreate(&e1, 0) ||
        cuEventRecord(e0, NULL) || cuMemcpyDtoDAsync(b, a, bytes, NULL) ||
        cuEventRecord(e1, NULL) || cuEventSynchronize(e1) ||
        cuEventElapsedTime(&ms, e0, e1))
        return 46;
    /* the copy, and e1's record: 2.3 us on every model */
    want = 2.0 * (double)bytes / (w->bandwidth_tbs * 1e12 * 0.85) * 1e3 +
           w->launch_us * 1e-3 + 2.3e-3;
    if (fabs(ms - want) > 1e-4 * want) {
        fprintf(stderr, "%s: copy %.6f ms, want %.6f ms\n", key, ms, want);
        return 47;
    }
    return 0;
}

static void
test_gpu_choice(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(model_wants) / sizeof(model_wants[0]);
         i++) {
        int rc = run_child("model", "AMPSHIM_EMU_GPU", model_wants[i].key);

        if (rc != 0)
            print_error("AMPSHIM_EMU_GPU=%s: check %d failed\n",
                        model_wants[i].key, rc);
        assert_int_equal(rc, 0);
    }
}

/* Behind by 4: a query neither runs work nor sees it finish at the next
 * query; a fifth op queued makes the oldest run; a host that polls long
 * enough sees the rest finish. */
static int
child_behind(void)
{
    CUstream st;
    CUevent first, last;
    CUdeviceptr d;
    int polls = 0, i;

    child_bring_up();
    if (cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) ||
        cuEventCreate(&first, CU_EVENT_DISABLE_TIMING) ||
        cuEventCreate(&last, CU_EVENT_DISABLE_TIMING) ||
        cuMemAlloc(&d, 4096))
        return 10;
    /* Four ops queued: the memset and the record, then two more. */
    if (cuMemsetD32Async(d, 1, 1024, st) || cuEventRecord(first, st) ||
        cuMemsetD32Async(d, 2, 1024, st) || cuMemsetD32Async(d, 3, 1024, st))
        return 11;
    for (i = 0; i < 10; i++)
        if (cuEventQuery(first) != CUDA_ERROR_NOT_READY ||
            cuStreamQuery(st) != CUDA_ERROR_NOT_READY)
            return 12;
    /* Two more: the queue of 6 runs its oldest two. */
    if (cuMemsetD32Async(d, 4, 1024, st) || cuEventRecord(last, st))
        return 13;
    if (cuEventQuery(first) != CUDA_SUCCESS ||
        cuEventQuery(last) != CUDA_ERROR_NOT_READY)
        return 14;
    while (cuStreamQuery(st) == CUDA_ERROR_NOT_READY && polls < 100000)
        polls++;
    if (polls < 100 || polls >= 100000 || cuEventQuery(last) != CUDA_SUCCESS)
        return 15;
    return cuMemFree(d) || cuStreamDestroy(st) ? 16 : 0;
}

/* Noise 0.3: the same op's time varies, within 30 % of the exact time. */
static int
child_noise(void)
{
    CUstream st;
    CUevent e0, e1;
    CUdeviceptr d;
    float ms, lo = 1e30f, hi = 0.0f;
    /* The memset and e1's record, each within the noise */
    double exact = (emu_model_ns(0.0, EMU_PREC_NONE, 64.0 * 1024 * 1024) +
                    emu_event_record_ns()) /
                   1e6;

    child_bring_up();
    if (cuStreamCreate(&st, CU_STREAM_NON_BLOCKING) ||
        cuEventCreate(&e0, 0) || cuEventCreate(&e1, 0) ||
        cuMemAlloc(&d, 64u << 20))
        return 10;
    for (int i = 0; i < 20; i++) {
        if (cuEventRecord(e0, st) || cuMemsetD32Async(d, 0, 16u << 20, st) ||
            cuEventRecord(e1, st) || cuEventSynchronize(e1) ||
            cuEventElapsedTime(&ms, e0, e1))
            return 11;
        lo = ms < lo ? ms : lo;
        hi = ms > hi ? ms : hi;
    }
    if (lo < 0.69 * exact || hi > 1.31 * exact || hi - lo < 0.1 * exact)
        return 12;
    return cuMemFree(d) ? 13 : 0;
}

/* A 64 MiB device: its memory as cuMemGetInfo reports it, and an
 * allocation past it fails as on a full GPU. */
static int
child_memory(void)
{
    CUdeviceptr a, b;
    size_t free_b, total;

    child_bring_up();
    if (cuMemGetInfo(&free_b, &total) || total != 64u << 20 || free_b > total)
        return 10;
    if (cuMemAlloc(&a, 48u << 20))
        return 11;
    if (cuMemAlloc(&b, 48u << 20) != CUDA_ERROR_OUT_OF_MEMORY)
        return 12;
    if (cuMemFree(a))
        return 13;
    /* A stream-ordered block kept after its free is not memory in use. */
    if (cuMemAllocAsync(&a, 48u << 20, NULL) || cuMemFreeAsync(a, NULL) ||
        cuCtxSynchronize() || cuMemAlloc(&b, 48u << 20))
        return 14;
    return cuMemFree(b) ? 15 : 0;
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_initialised),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_proc_address),
        cmocka_unit_test(test_contexts),
        cmocka_unit_test(test_ctx_ids),
        cmocka_unit_test(test_memory_round_trip),
        cmocka_unit_test(test_stream_ordered_reuse),
        cmocka_unit_test(test_memcpy_2d),
        cmocka_unit_test(test_memsets),
        cmocka_unit_test(test_unordered_access_named),
        cmocka_unit_test(test_device_behind),
        cmocka_unit_test(test_async_copy_stages_pageable_source),
        cmocka_unit_test(test_stream_query_and_flags),
        cmocka_unit_test(test_stream_ids),
        cmocka_unit_test(test_stream_ordered_allocation),
        cmocka_unit_test(test_zero_byte_async_allocation),
        cmocka_unit_test(test_async_copy_to_pageable_is_done_on_return),
        cmocka_unit_test(test_pointer_attributes),
        cmocka_unit_test(test_events_time_the_model),
        cmocka_unit_test(test_kernel_time_is_its_bytes),
        cmocka_unit_test(test_occupancy),
        cmocka_unit_test(test_file_size_limit),
        cmocka_unit_test(test_kernel_stats),
        cmocka_unit_test(test_legacy_stream_ordering),
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_graph_update),
        cmocka_unit_test(test_graph_clone),
        cmocka_unit_test(test_capture_thread_modes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_module_and_launch),
        cmocka_unit_test(test_host_read_of_device_memory_faults),
        cmocka_unit_test(test_freed_memory_faults_in_one_sync),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_sticky_error),
        cmocka_unit_test(test_gpu_choice),
    };

    if (argc == 3 && strcmp(argv[1], "--child") == 0) {
        if (strcmp(argv[2], "host-read") == 0)
            return child_host_read();
        if (strcmp(argv[2], "host-read-after-kernel") == 0)
            return child_host_read_after_kernel();
        if (strcmp(argv[2], "freed-in-one-sync") == 0)
            return child_freed_in_one_sync();
        if (strcmp(argv[2], "faults") == 0)
            return child_faults();
        if (strcmp(argv[2], "sticky") == 0)
            return child_sticky();
        if (strcmp(argv[2], "ctx-ids") == 0)
            return child_ctx_ids();
        if (strcmp(argv[2], "model") == 0)
            return child_model();
        if (strcmp(argv[2], "stats") == 0)
            return child_stats();
        if (strcmp(argv[2], "unordered") == 0)
            return child_unordered();
        if (strcmp(argv[2], "behind") == 0)
            return child_behind();
        if (strcmp(argv[2], "noise") == 0)
            return child_noise();
        if (strcmp(argv[2], "memory") == 0)
            return child_memory();
        if (strcmp(argv[2], "fsize") == 0)
            return child_fsize();
        return 99;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
