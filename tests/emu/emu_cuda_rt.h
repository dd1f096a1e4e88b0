// CUDA's built-ins for the kernels' own source compiled as host C++: the
// thread and block indices of the fiber that runs, barriers that switch
// fibers (emu_grid.c), block-shared memory and atomics. Blocks run one at a
// time and their threads switch only at barriers, so an atomic is a plain
// read-modify-write and a static is memory shared by the running block.
#ifndef EMU_CUDA_RT_H
#define EMU_CUDA_RT_H

#include "emu_kernels.h"

#include <stdint.h>

#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Launch bounds guide the device compiler's register allocation only.
#define __launch_bounds__(...)
// One instance for the whole grid, reused by each block in turn: the
// block that runs owns it, as on a GPU.
#define __shared__ static

#define threadIdx emu_thread_idx
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim

static inline void
__syncthreads(void)
{
    emu_grid_barrier(0);
}

static inline int
__syncthreads_or(int pred)
{
    return emu_grid_barrier(pred);
}

// No other thread runs between a thread's barriers: its writes are seen by
// every thread that runs after it.
static inline void
__threadfence(void)
{
}

static inline void
__threadfence_system(void)
{
}

// atomicAdd and atomicOr are one read-modify-write access, as the compiler
// may make of the plain sequence anyway: the device window counts the
// page they open as written (a fault's or a store's), whichever way it
// follows the kernel's accesses (core_window_access).
// A floating-point add has no such instruction: a load and a store.
template <typename T>
static inline T
atomicAdd(T *at, T v)
{
    if constexpr (std::is_integral<T>::value) {
        return __atomic_fetch_add(at, v, __ATOMIC_RELAXED);
    } else {
        T old = *at;

        *at = old + v;
        return old;
    }
}

template <typename T>
static inline T
atomicMax(T *at, T v)
{
    T old = *at;

    if (v > old)
        *at = v;
    return old;
}

template <typename T>
static inline T
atomicOr(T *at, T v)
{
    return __atomic_fetch_or(at, v, __ATOMIC_RELAXED);
}

template <typename T>
static inline T
atomicCAS(T *at, T expected, T v)
{
    T old = *at;

    if (old == expected)
        *at = v;
    return old;
}

#endif
