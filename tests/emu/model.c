/* The emulator's GPU model: a roofline table of named GPUs, chosen by
 * AMPSHIM_EMU_GPU, that gives every queued op its modelled duration. */
#include "core_state.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/*
 * NVIDIA's published dense peaks (datasheets) plus the limits a program
 * reads through cuDeviceGetAttribute, and for each precision the share of
 * its peak that cuBLAS reaches at large sizes (docs/emulator.md, "The GPU
 * models", names the source of every figure).
 *
 * Hopper (h100, h200) and Blackwell (b200): published measurements, until
 * this project's own (scripts/gpu-check.sh) replace them: cuBLAS is
 * reported at about 35-50 TFLOP/s in FP32 on an H100 SXM (0.65 of 66.9)
 * and about 320 in TF32 (0.65 of 494.7), with no primary source at hand,
 * and measured at 792 in BF16 (0.80 of 989.4; the Maximum Achievable
 * Matmul FLOPS table of github.com/stas00/ml-engineering,
 * compute/accelerator). Back-to-back kernels on one stream start about 1
 * to 1.3 us apart when the host runs ahead (Hazy Research, "Look Ma, No
 * Bubbles!", 2025: about 1.3 us per kernel on an H100 with CUDA graphs):
 * 1.2 us per queued op. FP64 keeps 0.8 of the FP64 Tensor Core peak. The
 * B200 takes the H100's shares until measured. Older GPUs: 0.8 of every
 * peak and 3 us per queued op. Streaming kernels reach 80-90 % of
 * bandwidth (0.85).
 *
 * The H200's shares are this project's measurements on one (cuBLAS 13.0,
 * 2026-11-30, docs/gpu-results.md): SGEMM 51.4 TFLOP/s at 4096^3 and
 * 8192^3 (0.77 of 66.9; 0.755 at 2048^3); TF32 420 and 434 at 4096^3 and
 * 8192^3 (0.85; 0.69 at 2048^3); the FP16 and BF16 GEMMs of a converted
 * 8192^3 call, the modelled 0.2 ms of its casts taken off, 602 and 648
 * (0.61 and 0.655 of 989.4: 0.63 for both). The H100, the same die, keeps
 * its published figures until measured itself.
 *
 * The H200 is an H100 (same GH100 die, 132 SMs, rates and limits) with 141
 * GB of HBM3e at 4.8 TB/s on a 6144-bit bus (NVIDIA H200 datasheet) and 60
 * MB of L2 (what PyTorch reads on an H200). The B200: 148 SMs, compute
 * capability 10.0, per GPU of the HGX B200 (nvidia.com/en-us/data-center/
 * hgx): FP32 75, TF32 2.2 PFLOPS sparse (1,100 dense), FP16/BF16 4.5
 * PFLOPS sparse (2,250 dense), FP64 and FP64 Tensor Core 37 TFLOPS, 180 GB
 * of HBM3e at 7.7 TB/s; the Blackwell tuning guide
 * (docs.nvidia.com/cuda/blackwell-tuning-guide): 64 warps and 32 blocks
 * per SM, 228 KB of shared memory per SM and 227 KB per block, 126 MB of
 * L2 (a B200 reports 132644864 bytes).
 *
 * FP64 on the H100, H200, B200 and A100: the FP64 Tensor Core peaks (67,
 * 37 and 19.5 TFLOPS), which cuBLAS's DGEMM reaches; Ada (L4, RTX 4090)
 * has no FP64 Tensor Cores and runs FP64 at 1/64 of its FP32 rate (Ada
 * whitepaper).
 *
 * The GPUs before TF32, which legacy FP32 programs still run on: FP32 on
 * CUDA cores, FP16 Tensor Cores 8x faster. Tesla V100 SXM2 (NVIDIA V100
 * datasheet, images.nvidia.com/content/technologies/volta/pdf/
 * volta-v100-datasheet-update-us-1165301-r5.pdf): FP64 7.8, FP32 15.7,
 * Tensor Core 125 TFLOPS, 32 GB of HBM2 at 900 GB/s; the Volta
 * architecture whitepaper: 80 SMs, 6 MB of L2, up to 96 KB of shared
 * memory per SM and per block, 2048 threads and 32 blocks per SM; compute
 * capability 7.0. T4 (NVIDIA T4 datasheet, nvidia.com/en-us/data-center/
 * tesla-t4): FP32 8.1, mixed-precision (FP16/FP32) 65 TFLOPS, 16 GB of
 * GDDR6 at 320 GB/s; the Turing tuning guide: 40 SMs, 4 MB of L2, 64 KB
 * of shared memory per SM, 1024 threads and 16 blocks per SM; compute
 * capability 7.5, FP64 at 1/32 of FP32. Neither has TF32 (an Ampere
 * format, compute capability 8.0 and later) or BF16 Tensor Cores: cuBLAS
 * "allows" TF32 (CUBLAS_TF32_TENSOR_OP_MATH, CUBLAS_COMPUTE_32F_FAST_TF32:
 * docs.nvidia.com/cuda/cublas, cublasMath_t and cublasComputeType_t), so
 * a request for it computes FP32 there, and cuDNN's FP32 convolutions use
 * TF32 only on Ampere and later (emu_tf32_available); BF16 operands run
 * on the CUDA cores at the FP32 rate (emu_half_prec). 3 us per queued op
 * and 0.8 of each peak, as the other GPUs without a measurement.
 */
static const struct core_gpu_spec core_gpus[] = {
    {
        .pub = { .key = "h100", .name = "NVIDIA H100 SXM (emulated)",
                 .cc_major = 9, .cc_minor = 0, .sm_count = 132,
                 .total_mem = (size_t)(80 * GIB),
                 .fp32_tflops = 66.9, .tf32_tflops = 494.7,
                 .fp16_tflops = 989.4, .fp64_tflops = 66.9,
                 .bandwidth_tbs = 3.35,
                 .fp32_efficiency = 0.65, .tf32_efficiency = 0.65,
                 .fp16_efficiency = 0.80, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 1.2 },
        .clock_khz = 1980000, .mem_clock_khz = 2619000, .bus_width = 5120,
        .l2_bytes = 50 * 1024 * 1024, .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32, .smem_per_sm = 233472,
        .smem_per_block_optin = 232448, .pci_bus = 0x18,
    },
    {
        .pub = { .key = "h200", .name = "NVIDIA H200 (emulated)",
                 .cc_major = 9, .cc_minor = 0, .sm_count = 132,
                 .total_mem = (size_t)(141 * GIB),
                 .fp32_tflops = 66.9, .tf32_tflops = 494.7,
                 .fp16_tflops = 989.4, .fp64_tflops = 66.9,
                 .bandwidth_tbs = 4.8,
                 /* Measured on an H200 (docs/gpu-results.md). */
                 .fp32_efficiency = 0.77, .tf32_efficiency = 0.85,
                 .fp16_efficiency = 0.63, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 1.2 },
        /* 4.8 TB/s over 6144 bits, double data rate: 3125 MHz. */
        .clock_khz = 1980000, .mem_clock_khz = 3125000, .bus_width = 6144,
        .l2_bytes = 60 * 1024 * 1024, .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32, .smem_per_sm = 233472,
        .smem_per_block_optin = 232448, .pci_bus = 0x18,
    },
    {
        .pub = { .key = "b200", .name = "NVIDIA B200 (emulated)",
                 .cc_major = 10, .cc_minor = 0, .sm_count = 148,
                 .total_mem = (size_t)(180 * GIB),
                 .fp32_tflops = 75.0, .tf32_tflops = 1100.0,
                 .fp16_tflops = 2250.0, .fp64_tflops = 37.0,
                 .bandwidth_tbs = 7.7,
                 .fp32_efficiency = 0.65, .tf32_efficiency = 0.65,
                 .fp16_efficiency = 0.80, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 1.2 },
        /* 7.7 TB/s over 8192 bits, double data rate: 3760 MHz. */
        .clock_khz = 1965000, .mem_clock_khz = 3760000, .bus_width = 8192,
        .l2_bytes = 132644864, .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32, .smem_per_sm = 233472,
        .smem_per_block_optin = 232448, .pci_bus = 0x18,
    },
    {
        .pub = { .key = "a100", .name = "NVIDIA A100 SXM 80GB (emulated)",
                 .cc_major = 8, .cc_minor = 0, .sm_count = 108,
                 .total_mem = (size_t)(80 * GIB),
                 .fp32_tflops = 19.5, .tf32_tflops = 156.0,
                 .fp16_tflops = 312.0, .fp64_tflops = 19.5,
                 .bandwidth_tbs = 2.04,
                 .fp32_efficiency = 0.8, .tf32_efficiency = 0.8,
                 .fp16_efficiency = 0.8, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 3.0 },
        .clock_khz = 1410000, .mem_clock_khz = 1593000, .bus_width = 5120,
        .l2_bytes = 40 * 1024 * 1024, .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32, .smem_per_sm = 167936,
        .smem_per_block_optin = 166912, .pci_bus = 0x07,
    },
    {
        .pub = { .key = "l4", .name = "NVIDIA L4 (emulated)",
                 .cc_major = 8, .cc_minor = 9, .sm_count = 58,
                 .total_mem = (size_t)(24 * GIB),
                 .fp32_tflops = 30.3, .tf32_tflops = 60.0,
                 .fp16_tflops = 121.0, .fp64_tflops = 0.47,
                 .bandwidth_tbs = 0.30,
                 .fp32_efficiency = 0.8, .tf32_efficiency = 0.8,
                 .fp16_efficiency = 0.8, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 3.0 },
        .clock_khz = 2040000, .mem_clock_khz = 6251000, .bus_width = 192,
        .l2_bytes = 48 * 1024 * 1024, .max_threads_per_sm = 1536,
        .max_blocks_per_sm = 24, .smem_per_sm = 102400,
        .smem_per_block_optin = 101376, .pci_bus = 0x01,
    },
    {
        /* FP16 Tensor Core rate with FP32 accumulate: half the
         * FP16-accumulate rate on GeForce parts. */
        .pub = { .key = "rtx4090",
                 .name = "NVIDIA GeForce RTX 4090 (emulated)",
                 .cc_major = 8, .cc_minor = 9, .sm_count = 128,
                 .total_mem = (size_t)(24 * GIB),
                 .fp32_tflops = 82.6, .tf32_tflops = 82.6,
                 .fp16_tflops = 165.2, .fp64_tflops = 1.29,
                 .bandwidth_tbs = 1.01,
                 .fp32_efficiency = 0.8, .tf32_efficiency = 0.8,
                 .fp16_efficiency = 0.8, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 3.0 },
        .clock_khz = 2520000, .mem_clock_khz = 10501000, .bus_width = 384,
        .l2_bytes = 72 * 1024 * 1024, .max_threads_per_sm = 1536,
        .max_blocks_per_sm = 24, .smem_per_sm = 102400,
        .smem_per_block_optin = 101376, .pci_bus = 0x01,
    },
    {
        /* No TF32 (compute capability 7.0): its cuBLAS and cuDNN run FP32
         * math on the CUDA cores, and the model charges a TF32 request
         * the FP32 rate (emu_model_tflops). */
        .pub = { .key = "v100", .name = "Tesla V100-SXM2-32GB (emulated)",
                 .cc_major = 7, .cc_minor = 0, .sm_count = 80,
                 .total_mem = (size_t)(32 * GIB),
                 .fp32_tflops = 15.7, .tf32_tflops = 0.0,
                 .fp16_tflops = 125.0, .fp64_tflops = 7.8,
                 .bandwidth_tbs = 0.9,
                 .fp32_efficiency = 0.8, .tf32_efficiency = 0.8,
                 .fp16_efficiency = 0.8, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 3.0 },
        /* 900 GB/s over 4096 bits of HBM2, double data rate: 877 MHz. */
        .clock_khz = 1530000, .mem_clock_khz = 877000, .bus_width = 4096,
        .l2_bytes = 6 * 1024 * 1024, .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32, .smem_per_sm = 98304,
        .smem_per_block_optin = 98304, .pci_bus = 0x06,
    },
    {
        /* Turing, compute capability 7.5: FP16 Tensor Cores, no TF32. */
        .pub = { .key = "t4", .name = "Tesla T4 (emulated)",
                 .cc_major = 7, .cc_minor = 5, .sm_count = 40,
                 .total_mem = (size_t)(16 * GIB),
                 .fp32_tflops = 8.1, .tf32_tflops = 0.0,
                 .fp16_tflops = 65.0, .fp64_tflops = 0.25,
                 .bandwidth_tbs = 0.32,
                 .fp32_efficiency = 0.8, .tf32_efficiency = 0.8,
                 .fp16_efficiency = 0.8, .fp64_efficiency = 0.8,
                 .mem_efficiency = 0.85, .launch_latency_us = 3.0 },
        /* 320 GB/s over 256 bits of GDDR6, as cudaDeviceProp reports it:
         * 5001 MHz, double data rate. */
        .clock_khz = 1590000, .mem_clock_khz = 5001000, .bus_width = 256,
        .l2_bytes = 4 * 1024 * 1024, .max_threads_per_sm = 1024,
        .max_blocks_per_sm = 16, .smem_per_sm = 65536,
        .smem_per_block_optin = 65536, .pci_bus = 0x3b,
    },
};

#define CORE_NGPUS (sizeof(core_gpus) / sizeof(core_gpus[0]))

static pthread_once_t core_gpu_once = PTHREAD_ONCE_INIT;
static struct core_gpu_spec core_gpu_chosen;

/* AMPSHIM_EMU_MEMORY=SIZE: the device's memory in bytes, with an optional
 * K, M or G (binary), in place of the GPU's own; allocations past it fail
 * as on a full GPU. */
static void
core_gpu_memory(void)
{
    const char *s = secure_getenv("AMPSHIM_EMU_MEMORY");
    unsigned long long v;
    char *end;

    if (!s || !*s)
        return;
    errno = 0;
    v = strtoull(s, &end, 10);
    switch (*end) {
    case 'K': v <<= 10; end++; break;
    case 'M': v <<= 20; end++; break;
    case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (errno || *end || v < (1u << 20) || v > core_gpu_chosen.pub.total_mem) {
        fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_MEMORY=%s is not a memory "
                "size (accepted: 1M to the GPU's %zu bytes, a number with an "
                "optional K, M or G); using the GPU's\n", s,
                core_gpu_chosen.pub.total_mem);
        return;
    }
    core_gpu_chosen.pub.total_mem = (size_t)v;
}

static void
core_gpu_choose(void)
{
    const char *want = secure_getenv("AMPSHIM_EMU_GPU");
    size_t i;

    core_gpu_chosen = core_gpus[0];
    if (want && *want) {
        for (i = 0; i < CORE_NGPUS; i++)
            if (strcmp(want, core_gpus[i].pub.key) == 0)
                break;
        if (i < CORE_NGPUS)
            core_gpu_chosen = core_gpus[i];
        else
            fprintf(stderr, "ampshim-emu: AMPSHIM_EMU_GPU=%s is not a known "
                    "GPU (accepted: h100, h200, b200, a100, l4, rtx4090, "
                    "v100, t4); using h100\n", want);
    }
    core_gpu_memory();
}

const struct core_gpu_spec *
core_gpu_spec(void)
{
    pthread_once(&core_gpu_once, core_gpu_choose);
    return &core_gpu_chosen;
}

const struct emu_gpu *
emu_gpu(void)
{
    return &core_gpu_spec()->pub;
}

double
emu_model_tflops(enum emu_prec prec)
{
    const struct emu_gpu *gpu = emu_gpu();

    switch (prec) {
    case EMU_PREC_FP32: return gpu->fp32_tflops * gpu->fp32_efficiency;
    case EMU_PREC_TF32: /* none: a TF32 request runs FP32 */
        return gpu->tf32_tflops > 0.0
                   ? gpu->tf32_tflops * gpu->tf32_efficiency
                   : gpu->fp32_tflops * gpu->fp32_efficiency;
    case EMU_PREC_FP16: return gpu->fp16_tflops * gpu->fp16_efficiency;
    case EMU_PREC_FP64: return gpu->fp64_tflops * gpu->fp64_efficiency;
    case EMU_PREC_NONE: break;
    }
    return 0.0;
}

double
emu_model_ns(double flops, enum emu_prec prec, double bytes)
{
    const struct emu_gpu *gpu = emu_gpu();
    double tflops = emu_model_tflops(prec), math_ns = 0.0, mem_ns = 0.0;

    /* 1 TFLOP/s is 1e3 flop per ns, 1 TB/s is 1e3 bytes per ns. */
    if (tflops > 0.0 && flops > 0.0)
        math_ns = flops / (tflops * 1e3);
    if (bytes > 0.0)
        mem_ns = bytes / (gpu->bandwidth_tbs * 1e3 * gpu->mem_efficiency);
    return (math_ns > mem_ns ? math_ns : mem_ns) +
           gpu->launch_latency_us * 1e3;
}

/* A cudaEventRecord between kernels costs about 2.3 us of device time,
 * measured on an A100 (../shared/REALITY.md, "What a real GPU does that
 * the emulator did not show"): the stream's next op starts that much
 * later. No other GPU has been measured, so every model charges it until
 * scripts/gpu-check.sh measures the GPU at hand. */
#define EMU_EVENT_RECORD_US 2.3

double
emu_event_record_ns(void)
{
    return EMU_EVENT_RECORD_US * 1e3;
}

double
emu_model_bf16x9_ns(double flops, double bytes, double elems)
{
    /* The split reads 4 bytes of each element and writes 3 x 2; the
     * products read the BF16 triples, 6 bytes an element where the FP32
     * product read 4. */
    double split = emu_model_ns(0.0, EMU_PREC_NONE, elems * 10.0);

    return split + emu_model_ns(9.0 * flops, emu_half_prec(1),
                                bytes + elems * 2.0);
}
