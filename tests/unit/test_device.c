/* Unit tests of the device layer on the emulated driver. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "amp_kernels.h"
#include "amp_math.h"
#include "device/device.h"
#include "emu_child.h"

#include <cuda.h>
#include <stdio.h>
#include <string.h>

static CUcontext primary;

/* Before the program brings CUDA up there is no context: no state. */
static void
test_no_context(void **state)
{
    assert_int_equal(amp_dev_init(), AMP_OK);
    assert_null(amp_dev_current());
}

static int
bring_up(void)
{
    CUdevice dev;

    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&primary, dev) != CUDA_SUCCESS ||
        cuCtxSetCurrent(primary) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static void
test_context_state_is_cached(void **state)
{
    struct amp_dev *dev;

    assert_int_equal(bring_up(), 0);
    dev = amp_dev_current();
    assert_non_null(dev);
    assert_ptr_equal(amp_dev_current(), dev);
    assert_int_equal(amp_dev_stream_capturing(NULL), 0);
}

/* Scratch, memset and a kernel launch, queued on a stream, give the bytes
 * the kernel's math implies once the stream is synchronised. */
static void
test_scratch_and_launch(void **state)
{
    struct amp_dev *dev = amp_dev_current();
    const float host[6] = {1.0f, -3.0f, 0.25f, 70000.0f, 5.0f, -6.0f};
    uint16_t out[8];
    float scale = 0.5f;
    CUdeviceptr src;
    amp_devptr dst, sc;
    int in_graph;
    CUstream stream;
    int64_t ld_src = 3, ld_dst = 4, rows = 3, cols = 2;
    void *params[] = {&src, &ld_src, &dst, &ld_dst, &rows, &cols, &sc};
    int i;

    assert_non_null(dev);
    assert_int_equal(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&src, sizeof host), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(src, host, sizeof host), CUDA_SUCCESS);
    assert_int_equal(amp_dev_alloc_async(dev, 256, stream, AMP_CAPTURE_ASK,
                                         &dst, &in_graph),
                     AMP_OK);
    assert_int_equal(amp_dev_alloc_async(dev, 4, stream, AMP_CAPTURE_ASK,
                                         &sc, &in_graph),
                     AMP_OK);
    assert_int_equal(dst % 256, 0);
    assert_int_equal(amp_dev_memset32_async(dst, 0x7e007e00u, 4, stream),
                     AMP_OK);
    assert_int_equal(cuMemcpyHtoDAsync(sc, &scale, 4, stream), CUDA_SUCCESS);
    assert_int_equal(amp_dev_launch(dev, AMP_KERNEL_CAST_F32_F16, 1, 32,
                                    stream, params),
                     AMP_OK);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(out, dst, sizeof out), CUDA_SUCCESS);
    for (i = 0; i < 6; i++)
        assert_int_equal(out[(i / 3) * 4 + i % 3],
                         amp_f32_to_f16(host[i] * 0.5f));
    assert_int_equal(out[3], 0x7e00); /* padding keeps the memset value */
    assert_int_equal(out[7], 0x7e00);
    amp_dev_free_async(dst, stream, in_graph);
    amp_dev_free_async(sc, stream, in_graph);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    cuMemFree(src);
    cuStreamDestroy(stream);
}

/* A block's maximum sees every thread's slot: with the largest element at
 * each of a block's 256 places in turn (one element a thread), the
 * maximum kernel finds it. */
static void
test_block_max_every_slot(void **state)
{
    struct amp_dev *dev = amp_dev_current();
    float host[AMP_KERNEL_BLOCK];
    int64_t ld = AMP_KERNEL_BLOCK, rows = AMP_KERNEL_BLOCK, cols = 1;
    CUdeviceptr src, max;
    void *params[] = {&src, &ld, &rows, &cols, &max};
    uint32_t got;
    int pos, i;

    assert_non_null(dev);
    assert_int_equal(cuMemAlloc(&src, sizeof host), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&max, 4), CUDA_SUCCESS);
    for (pos = 0; pos < AMP_KERNEL_BLOCK; pos++) {
        for (i = 0; i < AMP_KERNEL_BLOCK; i++)
            host[i] = i == pos ? -1000.0f - (float)pos : 1.0f + (float)i;
        assert_int_equal(cuMemcpyHtoD(src, host, sizeof host), CUDA_SUCCESS);
        assert_int_equal(cuMemsetD32(max, 0, 1), CUDA_SUCCESS);
        assert_int_equal(amp_dev_launch(dev, AMP_KERNEL_ABSMAX_F32, 1,
                                        AMP_KERNEL_BLOCK, NULL, params),
                         AMP_OK);
        assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
        assert_int_equal(cuMemcpyDtoH(&got, max, 4), CUDA_SUCCESS);
        if (got != amp_f32_bits(1000.0f + (float)pos))
            fail_msg("largest element at %d: block maximum %g", pos,
                     (double)amp_bits_f32(got));
    }
    cuMemFree(src);
    cuMemFree(max);
}

/* A grid-stride kernel's grid: a block per AMP_KERNEL_BLOCK elements up to
 * one full wave of the kernel on the device, the multiprocessors times the
 * blocks the driver's occupancy calculation fits on one. */
static void
test_grid_is_one_wave(void **state)
{
    struct amp_dev *dev = amp_dev_current();
    int sms = 0, fit = 0;
    CUdevice device;
    CUfunction f;
    CUmodule m;
    unsigned wave;

    assert_non_null(dev);
    assert_int_equal(cuCtxGetDevice(&device), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetAttribute(
                         &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                         device),
                     CUDA_SUCCESS);
    /* The kernel's occupancy as the driver gives it, in a module of the
     * shim's kernels of the test's own. */
    assert_int_equal(cuModuleLoadData(&m, amp_kernels_fatbin), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&f, m, AMP_K_CONV_OUTPUT),
                     CUDA_SUCCESS);
    assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(
                         &fit, f, AMP_KERNEL_BLOCK, 0),
                     CUDA_SUCCESS);
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    assert_true(fit > 0);
    wave = (unsigned)(sms * fit);
    assert_int_equal(amp_dev_grid(dev, AMP_KERNEL_CONV_OUTPUT, 1LL << 30),
                     wave);
    /* Below a wave, a block per AMP_KERNEL_PER_THREAD units a thread. */
    assert_int_equal(amp_dev_grid(dev, AMP_KERNEL_CONV_OUTPUT,
                                  (int64_t)wave * AMP_KERNEL_BLOCK *
                                          AMP_KERNEL_PER_THREAD -
                                      1),
                     wave);
    assert_int_equal(amp_dev_grid(dev, AMP_KERNEL_CONV_OUTPUT,
                                  (int64_t)wave * AMP_KERNEL_BLOCK),
                     (wave + AMP_KERNEL_PER_THREAD - 1) /
                         AMP_KERNEL_PER_THREAD);
    assert_int_equal(amp_dev_grid(dev, AMP_KERNEL_CONV_OUTPUT,
                                  AMP_KERNEL_BLOCK * AMP_KERNEL_PER_THREAD),
                     1);
    assert_int_equal(amp_dev_grid(dev, AMP_KERNEL_CONV_OUTPUT,
                                  AMP_KERNEL_BLOCK * AMP_KERNEL_PER_THREAD + 1),
                     2);
    assert_int_equal(amp_dev_grid(dev, AMP_KERNEL_CONV_OUTPUT, 0), 1);
}

/* Scratch comes from no pool of the program's: a pool the program made
 * the device's current one has nothing in use after a converted call's
 * scratch came and went. */
static void
test_scratch_pool(void **state)
{
    struct amp_dev *dev = amp_dev_current();
    CUmemPoolProps props;
    CUmemoryPool mine, was;
    cuuint64_t used_high = 1;
    amp_devptr p;
    int in_graph;
    CUstream stream;

    assert_non_null(dev);
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    assert_int_equal(cuMemPoolCreate(&mine, &props), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetMemPool(&was, 0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceSetMemPool(0, mine), CUDA_SUCCESS);
    assert_int_equal(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                     CUDA_SUCCESS);
    assert_int_equal(amp_dev_alloc_async(dev, 1 << 20, stream, AMP_CAPTURE_ASK,
                                         &p, &in_graph),
                     AMP_OK);
    assert_int_equal(in_graph, 0);
    amp_dev_free_async(p, stream, in_graph);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemPoolGetAttribute(
                         mine, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &used_high),
                     CUDA_SUCCESS);
    assert_int_equal(used_high, 0);
    assert_int_equal(cuDeviceSetMemPool(0, was), CUDA_SUCCESS);
    assert_int_equal(cuMemPoolDestroy(mine), CUDA_SUCCESS);
    cuStreamDestroy(stream);
}

/* Scratch of a captured call adds no node to the graph, and its memory is
 * freed by the shim's next call once the graph is gone. */
static void
test_captured_scratch(void **state)
{
    struct amp_dev *dev = amp_dev_current();
    size_t free_before, free_after, total, nodes = 1;
    CUgraphNode node;
    CUgraph graph;
    amp_devptr p;
    int in_graph;
    CUstream stream;

    assert_non_null(dev);
    assert_int_equal(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
    assert_int_equal(cuStreamBeginCapture(stream,
                                          CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_SUCCESS);
    assert_int_equal(amp_dev_alloc_async(dev, 1 << 20, stream, AMP_CAPTURE_ASK,
                                         &p, &in_graph),
                     AMP_OK);
    assert_int_equal(in_graph, 1);
    amp_dev_free_async(p, stream, in_graph);
    assert_int_equal(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    assert_int_equal(cuGraphGetNodes(graph, &node, &nodes), CUDA_SUCCESS);
    assert_int_equal(nodes, 0);
    assert_int_equal(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
    assert_true(free_after + (1 << 20) <= free_before);
    assert_int_equal(cuGraphDestroy(graph), CUDA_SUCCESS);
    assert_int_equal(amp_dev_alloc_async(dev, 256, stream, AMP_CAPTURE_ASK,
                                         &p, &in_graph),
                     AMP_OK);
    amp_dev_free_async(p, stream, in_graph);
    assert_int_equal(cuStreamSynchronize(stream), CUDA_SUCCESS);
    assert_int_equal(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
    assert_int_equal(free_after, free_before);
    cuStreamDestroy(stream);
}

/* A record let go while a kernel queued on its stream may still write it
 * (a first call that failed after its scales kernel was queued) is not
 * handed to another stream's key until that kernel is done: when stream
 * b gets the record, a's write has landed. */
static void
test_record_drains(void **state)
{
    struct amp_dev *dev = amp_dev_current();
    CUstream a, b;
    amp_devptr at_a, at;
    uint32_t seen = 0;
    int fresh, got = 0;
    uint64_t key;

    assert_non_null(dev);
    assert_int_equal(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING), 0);
    assert_int_equal(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING), 0);
    assert_int_equal(amp_dev_record(dev, 7, a, AMP_CAPTURE_ASK,
                                    &at_a, &fresh), AMP_OK);
    assert_int_equal(fresh, 1);
    assert_int_equal(amp_dev_memset32_async(at_a, 0xa5a5a5a5u, 16, a),
                     AMP_OK);
    amp_dev_record_drop(dev, at_a, 7, a);
    for (key = 1000; key < 5000 && !got; key++) {
        if (amp_dev_record(dev, key, b, AMP_CAPTURE_ASK,
                           &at, &fresh) != AMP_OK)
            continue;
        if (at == at_a) {
            got = 1;
            assert_int_equal(cuMemcpyDtoH(&seen, at_a, 4), 0);
            assert_int_equal(seen, 0xa5a5a5a5u);
        }
        amp_dev_record_drop(dev, at, key, b);
    }
    assert_true(got); /* the record serves again once drained */
    assert_int_equal(cuCtxSynchronize(), 0);
    cuStreamDestroy(a);
    cuStreamDestroy(b);
}

/* Records belong to a stream by its id: a stream made where one was
 * destroyed does not find the old one's record, and a destroyed
 * stream's records serve other streams again, so a program that makes a
 * stream per task keeps getting records. */
static void
test_record_streams_end(void **state)
{
    struct amp_dev *dev = amp_dev_current();
    amp_devptr first = 0, at;
    CUstream s;
    int i, fresh, refused = 0;

    assert_non_null(dev);
    for (i = 0; i < 600; i++) {
        assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), 0);
        if (amp_dev_record(dev, 99, s, AMP_CAPTURE_ASK,
                           &at, &fresh) != AMP_OK) {
            refused++;
        } else {
            /* Each stream is new: its key's record is fresh. */
            assert_int_equal(fresh, 1);
            amp_dev_record_ready(dev, at, 99);
            if (!first)
                first = at;
        }
        amp_dev_stream_ending(s);
        assert_int_equal(cuStreamDestroy(s), 0);
        assert_int_equal(cuCtxSynchronize(), 0);
    }
    printf("records refused to 600 short-lived streams: %d\n", refused);
    assert_int_equal(refused, 0);
}

/* Child scenarios: each exits 0 when the layer behaved. */
static int
child(const char *scenario)
{
    struct amp_dev *dev;
    amp_devptr p = 0;
    int64_t n = 1;
    int in_graph;
    void *params[] = {&p, &n, &n, &n, &p};

    if (bring_up() != 0)
        return 10;
    dev = amp_dev_current();
    if (strcmp(scenario, "module") == 0)
        /* A context whose kernels fail to load stays without them. */
        return dev == NULL && amp_dev_current() == NULL ? 0 : 1;
    if (!dev)
        return 2;
    if (strcmp(scenario, "alloc") == 0)
        return amp_dev_alloc_async(dev, 64, NULL, AMP_CAPTURE_ASK,
                                   &p, &in_graph) ==
                           AMP_ERR_DRIVER &&
                       amp_dev_alloc_async(dev, 64, NULL, AMP_CAPTURE_ASK,
                                           &p, &in_graph) ==
                           AMP_OK
                   ? 0
                   : 3;
    if (strcmp(scenario, "launch") == 0)
        return amp_dev_launch(dev, AMP_KERNEL_ABSMAX_F32, 1, 1, NULL,
                              params) == AMP_ERR_DRIVER
                   ? 0
                   : 4;
    return 5;
}

static void
test_faults(void **state)
{
    assert_int_equal(amp_test_run_child("module", "module:1"), 0);
    assert_int_equal(amp_test_run_child("alloc", "alloc-async:1"), 0);
    assert_int_equal(amp_test_run_child("launch", "launch:1"), 0);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_context),
        cmocka_unit_test(test_context_state_is_cached),
        cmocka_unit_test(test_scratch_and_launch),
        cmocka_unit_test(test_grid_is_one_wave),
        cmocka_unit_test(test_block_max_every_slot),
        cmocka_unit_test(test_scratch_pool),
        cmocka_unit_test(test_captured_scratch),
        cmocka_unit_test(test_record_drains),
        cmocka_unit_test(test_record_streams_end),
        cmocka_unit_test(test_faults),
    };

    if (argc == 3 && strcmp(argv[1], "--child") == 0)
        return child(argv[2]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
