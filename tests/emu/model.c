/* The emulator's GPU model: a roofline table of named GPUs, chosen by
 * AMPSHIM_EMU_GPU, that gives every queued op its modelled duration. */
#include "core_state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* NVIDIA's published dense peaks (datasheets) plus the limits a program reads
 * through cuDeviceGetAttribute. Efficiencies: GEMM reaches 70-85 % of
 * peak, streaming kernels 80-90 % of bandwidth. FP64: the H100 SXM and
 * A100 datasheets' FP64 Tensor Core peaks (67 and 19.5 TFLOPS), which
 * cuBLAS's DGEMM reaches; Ada (L4, RTX 4090) has no FP64 Tensor Cores and
 * runs FP64 at 1/64 of its FP32 rate (Ada whitepaper). */
static const struct core_gpu_spec core_gpus[] = {
    {
        .pub = { "h100", "NVIDIA H100 SXM (emulated)", 9, 0, 132,
                 (size_t)(80 * GIB), 66.9, 494.7, 989.4, 66.9, 3.35,
                 0.8, 0.85, 3.0 },
        .clock_khz = 1980000, .mem_clock_khz = 2619000, .bus_width = 5120,
        .l2_bytes = 50 * 1024 * 1024, .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32, .smem_per_sm = 233472,
        .smem_per_block_optin = 232448, .pci_bus = 0x18,
    },
    {
        .pub = { "a100", "NVIDIA A100 SXM 80GB (emulated)", 8, 0, 108,
                 (size_t)(80 * GIB), 19.5, 156.0, 312.0, 19.5, 2.04,
                 0.8, 0.85, 3.0 },
        .clock_khz = 1410000, .mem_clock_khz = 1593000, .bus_width = 5120,
        .l2_bytes = 40 * 1024 * 1024, .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32, .smem_per_sm = 167936,
        .smem_per_block_optin = 166912, .pci_bus = 0x07,
    },
    {
        .pub = { "l4", "NVIDIA L4 (emulated)", 8, 9, 58,
                 (size_t)(24 * GIB), 30.3, 60.0, 121.0, 0.47, 0.30,
                 0.8, 0.85, 3.0 },
        .clock_khz = 2040000, .mem_clock_khz = 6251000, .bus_width = 192,
        .l2_bytes = 48 * 1024 * 1024, .max_threads_per_sm = 1536,
        .max_blocks_per_sm = 24, .smem_per_sm = 102400,
        .smem_per_block_optin = 101376, .pci_bus = 0x01,
    },
    {
        /* FP16 Tensor Core rate with FP32 accumulate: half the
         * FP16-accumulate rate on GeForce parts. */
        .pub = { "rtx4090", "NVIDIA GeForce RTX 4090 (emulated)", 8, 9, 128,
                 (size_t)(24 * GIB), 82.6, 82.6, 165.2, 1.29, 1.01,
                 0.8, 0.85, 3.0 },
        .clock_khz = 2520000, .mem_clock_khz = 10501000, .bus_width = 384,
        .l2_bytes = 72 * 1024 * 1024, .max_threads_per_sm = 1536,
        .max_blocks_per_sm = 24, .smem_per_sm = 102400,
        .smem_per_block_optin = 101376, .pci_bus = 0x01,
    },
};

#define CORE_NGPUS (sizeof(core_gpus) / sizeof(core_gpus[0]))

static pthread_once_t core_gpu_once = PTHREAD_ONCE_INIT;
static const struct core_gpu_spec *core_gpu_chosen;

static void
core_gpu_choose(void)
{
    const char *want = secure_getenv("AMPSHIM_EMU_GPU");
    size_t i;

    core_gpu_chosen = &core_gpus[0];
    if (!want || !*want)
        return;
    for (i = 0; i < CORE_NGPUS; i++) {
        if (strcmp(want, core_gpus[i].pub.key) == 0) {
            core_gpu_chosen = &core_gpus[i];
            return;
        }
    }
    fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_GPU=%s is not a known GPU "
            "(accepted: h100, a100, l4, rtx4090); using h100\n", want);
}

const struct core_gpu_spec *
core_gpu_spec(void)
{
    pthread_once(&core_gpu_once, core_gpu_choose);
    return core_gpu_chosen;
}

const struct emu_gpu *
emu_gpu(void)
{
    return &core_gpu_spec()->pub;
}

double
emu_model_ns(double flops, enum emu_prec prec, double bytes)
{
    const struct emu_gpu *gpu = emu_gpu();
    double tflops = 0.0, math_ns = 0.0, mem_ns = 0.0;

    switch (prec) {
    case EMU_PREC_FP32: tflops = gpu->fp32_tflops; break;
    case EMU_PREC_TF32: tflops = gpu->tf32_tflops; break;
    case EMU_PREC_FP16: tflops = gpu->fp16_tflops; break;
    case EMU_PREC_FP64: tflops = gpu->fp64_tflops; break;
    case EMU_PREC_NONE: break;
    }
    /* 1 TFLOP/s is 1e3 flop per ns, 1 TB/s is 1e3 bytes per ns. */
    if (tflops > 0.0 && flops > 0.0)
        math_ns = flops / (tflops * 1e3 * gpu->math_efficiency);
    if (bytes > 0.0)
        mem_ns = bytes / (gpu->bandwidth_tbs * 1e3 * gpu->mem_efficiency);
    return (math_ns > mem_ns ? math_ns : mem_ns) +
           gpu->launch_latency_us * 1e3;
}
