/* Host implementations of device kernels, looked up by name by the emulated
 * cuModuleGetFunction and run by the emulated cuLaunchKernel. */
#ifndef EMU_KERNELS_H
#define EMU_KERNELS_H

#include <cuda.h>
#include <stddef.h>

#define EMU_KERNEL_MAX_PARAMS 16

/* One launch, with the kernel parameters copied at cuLaunchKernel time
 * (the caller's kernelParams are only valid during the call). */
struct emu_launch {
    unsigned grid[3];
    unsigned block[3];
    unsigned shared_bytes;
    void *params[EMU_KERNEL_MAX_PARAMS]; /* params[i] points to a copy */
};

struct emu_kernel {
    const char *name;                       /* the extern "C" kernel name */
    int nparams;
    size_t param_size[EMU_KERNEL_MAX_PARAMS];
    /* Runs every thread of the grid; device pointers among the parameters
     * are translated with emu_dev_at(). Returns CUDA_SUCCESS, or
     * CUDA_ERROR_ILLEGAL_ADDRESS when a pointer is outside its allocation. */
    CUresult (*run)(const struct emu_launch *launch);
    /* Bytes the launch reads and writes, for the timing model. */
    double (*bytes)(const struct emu_launch *launch);
};

/* The kernels the emulator knows, terminated by an entry with name NULL. */
extern const struct emu_kernel emu_kernels[];

/* The entry named `name`, or NULL. */
const struct emu_kernel *emu_kernel_find(const char *name);

#endif
