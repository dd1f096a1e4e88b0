// Block and grid reductions the kernels share (device code only).
#ifndef AMP_REDUCE_CUH
#define AMP_REDUCE_CUH

#include "amp_kernels.h"
#include "amp_math.h"

// Every kernel's launch bounds: blocks of AMP_KERNEL_BLOCK threads, at
// least 4 of them resident per multiprocessor (65536 registers: 64 per
// thread at most), so that an element loop's latency is hidden by enough
// warps. The kernel_resources test checks each kernel's registers and that
// none uses a stack (scripts/ptxas_resources.py).
#define AMP_KERNEL_MIN_BLOCKS 4
#define AMP_KERNEL_BOUNDS \
    __launch_bounds__(AMP_KERNEL_BLOCK, AMP_KERNEL_MIN_BLOCKS)

// A grid-stride kernel's thread index and thread count.
#define AMP_TID ((int64_t)blockIdx.x * blockDim.x + threadIdx.x)
#define AMP_NTHREADS ((int64_t)gridDim.x * blockDim.x)

// A block's reductions take two barriers whatever its size, not one per
// level of a tree: after the first, each of the first AMP_REDUCE_LANES
// threads combines the slots lane, lane + AMP_REDUCE_LANES, ... (strided,
// so that consecutive threads read consecutive banks); after the second,
// thread 0 combines those. On the emulator every barrier switches each
// thread of the block in turn, so a tree's eight levels cost four times
// the reduction's two.
#define AMP_REDUCE_LANES 16u

// The largest of every thread's slots[threadIdx.x], left in slots[0] for
// thread 0 (a caller whose other threads read it adds a barrier), and
// whether any thread passed a non-zero `any` (for every thread, as
// __syncthreads_or). Every thread of the block calls it.
static __device__ int
amp_block_max_or(uint32_t *slots, int any)
{
    any = __syncthreads_or(any);
    if (threadIdx.x < AMP_REDUCE_LANES) {
        uint32_t m = slots[threadIdx.x];

        for (unsigned i = threadIdx.x + AMP_REDUCE_LANES; i < blockDim.x;
             i += AMP_REDUCE_LANES)
            m = slots[i] > m ? slots[i] : m;
        slots[threadIdx.x] = m;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        for (unsigned i = 1; i < AMP_REDUCE_LANES && i < blockDim.x; i++)
            slots[0] = slots[i] > slots[0] ? slots[i] : slots[0];
    return any;
}

// amp_block_max_or without the flag.
static __device__ void
amp_block_max(uint32_t *slots)
{
    (void)amp_block_max_or(slots, 0);
}

// Called by one thread of each block after its block's atomics on device
// memory: true in the last block of the grid to get here, where every other
// block's atomics are visible. *done must be zeroed before the kernel.
static __device__ int
amp_last_block(uint32_t *done)
{
    __threadfence();
    return atomicAdd(done, 1u) == gridDim.x - 1;
}

// Called by one thread of each block after its block's atomics on *accum:
// in the last block of the grid, the totals to *slot (page-locked host
// memory mapped for the device), for the host's harvest.
static __device__ void
amp_shadow_publish(struct amp_shadow_accum *accum,
                   struct amp_shadow_error *slot)
{
    if (!amp_last_block(&accum->blocks_done))
        return;
    slot->max_abs = atomicMax(&accum->error.max_abs, 0u);
    slot->max_ref = atomicMax(&accum->error.max_ref, 0u);
    slot->nonfinite = atomicAdd(&accum->error.nonfinite, 0ull);
    slot->sq_diff = atomicAdd(&accum->error.sq_diff, 0.0);
    slot->sq_ref = atomicAdd(&accum->error.sq_ref, 0.0);
    slot->compared = atomicAdd(&accum->error.compared, 0ull);
    __threadfence_system();
}

// Reduces every thread's errors e into *accum (zeroed before the kernel);
// the last block to finish writes the total to *slot (page-locked host
// memory mapped for the device). Every thread of the block calls it.
static __device__ void
amp_shadow_reduce(struct amp_shadow_error e, struct amp_shadow_accum *accum,
                  struct amp_shadow_error *slot)
{
    __shared__ uint32_t abs_max[AMP_KERNEL_BLOCK];
    __shared__ uint32_t ref_max[AMP_KERNEL_BLOCK];
    __shared__ double sq_diff[AMP_KERNEL_BLOCK];
    __shared__ double sq_ref[AMP_KERNEL_BLOCK];
    __shared__ unsigned long long nonfinite, compared;

    if (threadIdx.x == 0)
        nonfinite = compared = 0;
    abs_max[threadIdx.x] = e.max_abs;
    ref_max[threadIdx.x] = e.max_ref;
    sq_diff[threadIdx.x] = e.sq_diff;
    sq_ref[threadIdx.x] = e.sq_ref;
    __syncthreads();
    if (e.nonfinite)
        atomicAdd(&nonfinite, e.nonfinite);
    if (e.compared)
        atomicAdd(&compared, e.compared);
    // The four reductions in the two rounds of amp_block_max_or, the sums
    // in the same order on every run.
    if (threadIdx.x < AMP_REDUCE_LANES) {
        unsigned t = threadIdx.x;

        for (unsigned o = t + AMP_REDUCE_LANES; o < blockDim.x;
             o += AMP_REDUCE_LANES) {
            abs_max[t] = abs_max[o] > abs_max[t] ? abs_max[o] : abs_max[t];
            ref_max[t] = ref_max[o] > ref_max[t] ? ref_max[o] : ref_max[t];
            sq_diff[t] += sq_diff[o];
            sq_ref[t] += sq_ref[o];
        }
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    for (unsigned o = 1; o < AMP_REDUCE_LANES && o < blockDim.x; o++) {
        abs_max[0] = abs_max[o] > abs_max[0] ? abs_max[o] : abs_max[0];
        ref_max[0] = ref_max[o] > ref_max[0] ? ref_max[o] : ref_max[0];
        sq_diff[0] += sq_diff[o];
        sq_ref[0] += sq_ref[o];
    }
    atomicMax(&accum->error.max_abs, abs_max[0]);
    atomicMax(&accum->error.max_ref, ref_max[0]);
    atomicAdd(&accum->error.nonfinite, nonfinite);
    atomicAdd(&accum->error.sq_diff, sq_diff[0]);
    atomicAdd(&accum->error.sq_ref, sq_ref[0]);
    atomicAdd(&accum->error.compared, compared);
    amp_shadow_publish(accum, slot);
}

// Adds every thread's count to accum->error.nonfinite (accum zeroed before
// the kernel); the last block to finish writes the totals to *slot, the
// other errors still 0: amp_shadow_reduce for a kernel that checks only
// for non-finite results. Every thread of the block calls it. A thread
// that counted adds its count itself (non-finite results are rare), so
// the block needs one barrier and no shared total.
static __device__ void
amp_count_reduce(uint32_t count, struct amp_shadow_accum *accum,
                 struct amp_shadow_error *slot)
{
    if (count) {
        atomicAdd(&accum->error.nonfinite, (unsigned long long)count);
        __threadfence();
    }
    __syncthreads();
    if (threadIdx.x == 0)
        amp_shadow_publish(accum, slot);
}

#endif
