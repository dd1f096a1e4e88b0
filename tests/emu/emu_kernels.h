/* The shim's kernels compiled for the host (emu_kernels.cpp), looked up by
 * name by the emulated cuModuleGetFunction and run by the emulated
 * cuLaunchKernel through emu_grid_run(). */
#ifndef EMU_KERNELS_H
#define EMU_KERNELS_H

#include <cuda.h>
#include <stddef.h>

#define EMU_KERNEL_MAX_PARAMS 16

/* One kernel, every field taken from its definition in the kernels'
 * sources. */
struct emu_kernel {
    const char *name;                       /* the extern "C" kernel name */
    int nparams;
    size_t param_size[EMU_KERNEL_MAX_PARAMS];   /* sizeof each parameter */
    size_t param_align[EMU_KERNEL_MAX_PARAMS];  /* alignof each parameter */
    unsigned pointer_params;    /* bit i: parameter i is a pointer */
    /* Calls the kernel function for the current thread of the grid with
     * params[i] pointing to a copy of parameter i. */
    void (*entry)(void *const *params);
};

#ifdef __cplusplus
extern "C" {
#endif

/* Every kernel the sources define, terminated by an entry with name NULL. */
extern const struct emu_kernel emu_kernels[];

/* The entry named `name`, or NULL. */
const struct emu_kernel *emu_kernel_find(const char *name);

/* A kernel's registers per thread and static shared memory per block, as
 * ptxas allocates them for sm_90 (amp_kernels_resources.h, generated from
 * the build's `ptxas -v` report): 0 and 0 where the report does not name
 * it. */
void emu_kernel_resources(const struct emu_kernel *k, int *registers,
                          int *shared_bytes);

/* 1 where the kernels are built to name each of their loads and stores to
 * the window (core.c, core_window_access), 0 where its faults count them. */
extern const int emu_kernels_tracked __attribute__((visibility("hidden")));

/* One launch: its shape and its parameters (params[i] points to a copy). */
struct emu_grid {
    const struct emu_kernel *kernel;
    unsigned grid[3];
    unsigned block[3];
    void *params[EMU_KERNEL_MAX_PARAMS];
};

/* Runs every block of the grid, one after another, each block's threads
 * as fibers that switch at barriers, with device memory open to them (see
 * core_window_open). Returns CUDA_SUCCESS, or CUDA_ERROR_ILLEGAL_ADDRESS
 * when a thread touched memory outside every allocation (the launch stops
 * there); *bytes gets the device memory traffic of the run. Caller holds
 * the core lock. */
CUresult emu_grid_run(const struct emu_grid *launch, double *bytes);

/* What CUDA's built-ins read in the host-compiled kernels (emu_cuda_rt.h):
 * the running thread's indices and the launch's shape. */
struct emu_dim3 {
    unsigned x, y, z;
};

/* Hidden, as the barrier below: the kernels reach them directly, not
 * through the library's tables, in every thread of every launch. */
#define EMU_GRID_HIDDEN __attribute__((visibility("hidden")))

extern struct emu_dim3 emu_thread_idx EMU_GRID_HIDDEN,
    emu_block_idx EMU_GRID_HIDDEN, emu_block_dim EMU_GRID_HIDDEN,
    emu_grid_dim EMU_GRID_HIDDEN;

/* __syncthreads: the running thread waits until every thread of its block
 * has reached a barrier or ended. Returns whether any of them passed a
 * non-zero `pred` (__syncthreads_or). */
int emu_grid_barrier(int pred) EMU_GRID_HIDDEN;

#ifdef __cplusplus
}
#endif

#endif
