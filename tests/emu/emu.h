/* The CPU device emulator's shared core, exported by the emulated libcuda.so.1
 * to the runtime, cuBLAS and (later) cuDNN stand-ins. */
#ifndef EMU_H
#define EMU_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Everything here is exported from libcuda.so.1 with the emu_ prefix, next
 * to the driver API. The stand-ins for the other libraries link to it; no
 * product code ever does.
 *
 * Locking: the core has one lock. Every emu_ function takes it itself; the
 * op callbacks (struct emu_op.run) are called with it held and must not call
 * driver API or emu_ functions other than emu_dev_at() / emu_op_fail().
 */

/* ---- GPU model (roofline) ---------------------------------------------- */

/* Precision classes of math work, for the timing model. */
enum emu_prec {
    EMU_PREC_NONE = 0,  /* memory-bound work only (copies, casts) */
    EMU_PREC_FP32,      /* CUDA cores, FP32 FMA */
    EMU_PREC_TF32,      /* Tensor Cores, TF32 inputs, FP32 accumulate */
    EMU_PREC_FP16,      /* Tensor Cores, FP16/BF16 inputs, FP32 accumulate */
    EMU_PREC_FP64,      /* FP64 work (the DGEMM rate: Tensor Cores where
                         * the GPU has FP64 ones) */
};

struct emu_gpu {
    const char *key;          /* AMPSHIM_EMU_GPU value: "h100", "a100", ... */
    const char *name;         /* device name the driver reports */
    int cc_major, cc_minor;   /* compute capability */
    int sm_count;
    size_t total_mem;         /* bytes */
    double fp32_tflops;       /* published dense peaks */
    double tf32_tflops;
    double fp16_tflops;       /* FP16/BF16 Tensor Core, FP32 accumulate */
    double fp64_tflops;       /* FP64: Tensor Core (DMMA) peak where there
                               * is one, else the CUDA cores' */
    double bandwidth_tbs;     /* TB/s */
    /* Achievable shares of each peak for GEMM-like work, what cuBLAS
     * reaches at large sizes; the rate the model charges is peak times
     * share (emu_model_tflops). */
    double fp32_efficiency;
    double tf32_efficiency;
    double fp16_efficiency;
    double fp64_efficiency;
    double mem_efficiency;    /* achievable share of bandwidth */
    double launch_latency_us; /* per queued kernel or library call: how far
                               * apart back-to-back ops on a stream start */
};

/* The modelled GPU, chosen once by AMPSHIM_EMU_GPU (default "h100"). */
const struct emu_gpu *emu_gpu(void);

/* The device time a recorded event that keeps timing takes on its stream
 * (model.c): every model charges the A100's measured figure. */
double emu_event_record_ns(void);

/* The rate in TFLOP/s the model charges math at `prec` on the modelled
 * GPU: its published peak times its achievable share; 0 for
 * EMU_PREC_NONE. */
double emu_model_tflops(enum emu_prec prec);

/* Modelled duration in nanoseconds of work doing `flops` at `prec` and
 * moving `bytes`: max(flops / emu_model_tflops(prec), bytes / achievable
 * bandwidth) + launch latency. */
double emu_model_ns(double flops, enum emu_prec prec, double bytes);

/* ---- Device memory ------------------------------------------------------ */

/* Host alias of the device range [p, p + bytes), for use inside op
 * callbacks and synchronous copies only. NULL when the range is not
 * entirely inside one live allocation (the caller then fails with an
 * illegal-address error). bytes == 0 checks only that p is inside one. */
void *emu_dev_at(CUdeviceptr p, size_t bytes);

/* Inside an op: notes that it wrote [p, p + bytes), so that a later op of
 * another stream that uses the range with nothing ordering it after this
 * one is named (docs/emulator.md, "Streams"). emu_dev_at notes the use. */
void emu_dev_wrote(CUdeviceptr p, size_t bytes);

/* 1 if p lies in the emulator's device address range (live or not). */
int emu_is_device_address(const void *p);

/* ---- Streams and deferred work ----------------------------------------- */

struct emu_op {
    const char *name;         /* for traces and error messages */
    /* Runs the work; called once, in stream order, with the core lock
     * held. Returns CUDA_SUCCESS or the error that becomes sticky for the
     * context (e.g. CUDA_ERROR_ILLEGAL_ADDRESS from a failed emu_dev_at). */
    CUresult (*run)(void *arg);
    void (*release)(void *arg); /* frees arg after run (or on teardown); may be NULL */
    void *arg;
    double model_ns;          /* modelled duration (see emu_model_ns) */
    /* What a stream capture records the op as: a CUgraphNodeType
     * (0, CU_GRAPH_NODE_TYPE_KERNEL, unless set). */
    int node;
};

/* Queues op on stream (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a
 * stream of the current context). Fails with the driver's status for a bad
 * stream or no current context; on failure op->release is called. */
CUresult emu_enqueue(CUstream stream, const struct emu_op *op);

/* Runs everything queued on every stream of the current context. */
CUresult emu_sync_all(void);

/* ---- Contexts ------------------------------------------------------------ */

/* What the CUDA runtime does lazily on first use in a thread: cuInit(0),
 * and if the thread has no current context, retain device `dev`'s primary
 * context and make it current. */
CUresult emu_runtime_bind(int dev);

/* The current context's device, or -1 with no context. */
int emu_current_device(void);

/* For a library call that allocates device memory synchronously (the
 * vendors' handle creation): while a global capture, or a thread-local
 * one of this thread, is running in the current context, such a call is
 * not allowed; it invalidates the capture and this returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. CUDA_SUCCESS otherwise (also
 * with no current context). */
CUresult emu_capture_unsafe_call(void);

/* Reports on stderr why a queued op failed and returns `status`, the error
 * that becomes sticky; for op callbacks. */
CUresult emu_op_fail(CUresult status, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Fault injection ----------------------------------------------------- */

/* Counts one occurrence of `what` (an allocation kind "alloc",
 * "alloc-async", "module", "launch", "event", or an API name such as
 * "cublasGemmEx") and tells whether AMPSHIM_EMU_FAIL asks this occurrence
 * to fail. Returns 0 for no fault, else the status code given in the
 * variable's entry (`what:N[:status]`), or `default_status` when the entry
 * names none. Entries: comma-separated; N counts from 1; "what:N+" fails
 * the Nth and every later occurrence. */
int emu_fault(const char *what, int default_status);

/* emu_fault for a function that writes an output: *partial is set to 1
 * when the failing entry ends in ":partial" (`what:N[+][:status]:partial`),
 * asking the function to write part of its output, in stream order, before
 * it returns the status: a vendor call whose first kernels ran and a later
 * launch failed. Functions without such an output call emu_fault, which
 * fails them whole. */
int emu_fault_partial(const char *what, int default_status, int *partial);

/* ---- The call log ----------------------------------------------------------- */

/* 1 when AMPSHIM_EMU_CALL_LOG=1: the library stand-ins' GEMM entry points
 * then print one line per call they accept, with what the caller gave
 * them, for tests that check what a caller passed on. */
int emu_call_log_on(void);

/* Prints "ampshim-emu: call " and the formatted text as one line on
 * stderr. */
void emu_call_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Numerics ------------------------------------------------------------ */

/* Bit-exact IEEE conversions: round to nearest even, subnormals, overflow
 * to infinity, NaN stays NaN. Written independently of the shim's own
 * conversions in kernels/amp_math.h, so that one checks the other. */
uint16_t emu_f32_to_f16(float f);
float emu_f16_to_f32(uint16_t h);
uint16_t emu_f32_to_bf16(float f);
float emu_bf16_to_f32(uint16_t h);
/* Rounds to TF32 (10 explicit mantissa bits, nearest even), kept in a float. */
float emu_round_tf32(float f);

/* 1 when the libraries' FP32 math may use TF32: the modelled GPU has it
 * (compute capability 8 and later) and NVIDIA_TF32_OVERRIDE is not "0". */
int emu_tf32_available(void);

/* The rate Tensor Core math on half operands runs at: FP16 Tensor Cores
 * from compute capability 7.0 (Volta); BF16 ones only from 8.0 (Ampere),
 * before which BF16 products run on the CUDA cores at the FP32 rate.
 * bf16: the operands are BF16. */
enum emu_prec emu_half_prec(int bf16);

/* cuBLAS's FP32 emulation with BF16x9 (CUBLAS_COMPUTE_32F_EMULATED_16BFX9,
 * CUBLAS_FP32_EMULATED_BF16X9_MATH, the cuBLASLt emulation descriptor):
 * each FP32 operand is written as three BF16 values and the product is the
 * nine BF16 products summed in FP32. cuBLAS implements it on compute
 * capability 10.0 and 10.3 (B200/GB200, B300/GB300); on other GPUs the
 * API is accepted and the product is plain FP32 (NVIDIA's
 * CUDALibrarySamples, cuBLAS/Emulation: "While the API is supported on all
 * GPUs supported by the CUDA toolkit, emulated algorithms are implemented
 * on a subset of architectures"; docs.nvidia.com/cuda/cublas,
 * "Floating Point Emulation"). 1 when the modelled GPU has it. */
int emu_bf16x9_available(void);

/* Whether a product that asks for BF16x9 runs it, given the emulation
 * strategy (cublasEmulationStrategy_t: 0 default, 1 performant, 2 eager)
 * and the modelled times of the native FP32 product and of the emulated
 * one. DEFAULT is PERFORMANT unless CUBLAS_EMULATION_STRATEGY says
 * `eager` (cublas_api.h); PERFORMANT emulates "when it provides a
 * performance benefit", which the emulator reads as: when the model's
 * emulated time is below its FP32 time; EAGER "whenever possible". Never
 * on a GPU without it (emu_bf16x9_available). */
int emu_bf16x9_runs(int strategy, double fp32_ns, double bf16x9_ns);

/* Modelled time of a BF16x9 product that does `flops` (the FP32
 * product's count) moving `bytes`, whose operands A and B have `elems`
 * elements together: their split into BF16 triples (each element read as
 * FP32 and written as three BF16, a launch of its own) and the nine
 * products at the BF16 Tensor Core rate. */
double emu_model_bf16x9_ns(double flops, double bytes, double elems);

/* Element types the library stand-ins store in device memory. */
/* ---- Matrix products (blas.c) --------------------------------------------- */

/* C = op(A) op(B) + beta C in FP32 on the CPU's BLAS, column-major, C
 * m x n with leading dimension ldc (not read when beta is 0); op
 * transposes when trans*. k may be 0 (C = beta C). Deterministic for a given AMPSHIM_EMU_THREADS. */
void emu_cpu_sgemm(int transa, int transb, int64_t m, int64_t n, int64_t k,
                   const float *a, int64_t lda, const float *b, int64_t ldb,
                   float beta, float *c, int64_t ldc);

/* C = op(A) op(B) as BF16x9 computes it: each element of op(A) and op(B)
 * split into three BF16 values (x = x0 + x1 + x2, each the remainder so far
 * rounded to nearest even: exact for finite x), and the nine products
 * op(A)_i op(B)_j (each term x_i y_j exact in FP32) accumulated into C in
 * FP32 on the BLAS, the smallest first (i + j from 4 down to 0). An
 * infinite operand
 * leaves a NaN remainder, so infinities come out as NaN: cuBLAS's release
 * notes (12.9) say the emulation treats non-numbers as interchangeable
 * error indicators. C m x n, leading dimension ldc, overwritten.
 * CUDA_ERROR_OUT_OF_MEMORY when the host has no room for the parts. */
CUresult emu_cpu_sgemm_bf16x9(int transa, int transb, int64_t m, int64_t n,
                              int64_t k, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float *c,
                              int64_t ldc);

/* The BLAS's thread count (AMPSHIM_EMU_THREADS, 1 to 64; default 1). */
int emu_cpu_threads(void);

/* Runs fn(arg), which calls the CPU BLAS (cblas_* of <cblas.h>), at the
 * fixed thread count and while the BLAS is open: returns fn's result, or
 * CUDA_ERROR_DEINITIALIZED without calling it once the process is exiting
 * and the BLAS has closed. For op callbacks, like emu_dev_at. */
CUresult emu_cpu_blas(CUresult (*fn)(void *arg), void *arg);

enum emu_elem {
    EMU_ELEM_F32 = 0,
    EMU_ELEM_F16,
    EMU_ELEM_BF16,
};

/* Element idx of an array of `elem` (through a host alias), as float, and
 * the store that rounds a float to the element type bit-exactly. */
float emu_elem_load(const void *base, size_t idx, enum emu_elem elem);
void emu_elem_store(void *base, size_t idx, enum emu_elem elem, float v);

/* emu_round_tf32 inline, for the inner loops of emulated convolutions
 * (every operand of every TF32 product goes through it). On the bits: add
 * half a unit of the 10th mantissa bit, ties to even, and clear the 13
 * bits below it. A carry out of the largest finite value gives infinity;
 * subnormals keep the same quantum, as in FP32. */
static inline float
emu_round_tf32_inline(float f)
{
    uint32_t u, lsb;

    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0x7f800000u)
        return f;               /* Inf and NaN unchanged */
    lsb = (u >> 13) & 1u;
    u = (u + 0x0fffu + lsb) & 0xffffe000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * emu_f32_to_f16 and emu_f16_to_f32 inline: every operand of every
 * emulated FP16 product goes through them. On the bits, as the conversion
 * instructions do: FP32 keeps 13 more mantissa bits than FP16; nearest
 * even adds just under half of the dropped part, plus the kept part's last
 * bit. test_numerics checks both against a table of every FP16 value.
 */
static inline uint16_t
emu_f32_to_f16_inline(float f)
{
    uint32_t u, a, m, q, rest, half;
    uint16_t sign;
    int shift;

    memcpy(&u, &f, sizeof u);
    a = u & 0x7fffffffu;
    sign = (uint16_t)((u >> 16) & 0x8000u);
    if (a > 0x7f800000u)    /* quiet NaN, sign and top payload bits kept */
        return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x03ffu));
    if (a >= 0x477ff000u)   /* 65520 and above round past 65504: Inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* normal: 2^-14 and above */
        a += 0x0fffu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((a - 0x38000000u) >> 13));
    }
    if (a < 0x33000000u)    /* at most 2^-25, half the smallest step: 0 */
        return sign;
    /* Subnormal: the count of 2^-24 steps, rounded to nearest even (a
     * count of 1024 is the smallest normal, encoded alike). */
    m = (a & 0x007fffffu) | 0x00800000u;
    shift = 126 - (int)(a >> 23);       /* 14 to 24 */
    q = m >> shift;
    rest = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u)))
        q++;
    return (uint16_t)(sign | q);
}

static inline float
emu_f16_to_f32_inline(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t expo = (h >> 10) & 0x1fu, mant = h & 0x3ffu, u;
    float f;

    if (expo == 31) {   /* Inf, or a quiet NaN with the payload on top */
        u = sign | 0x7f800000u | (mant ? 0x00400000u | (mant << 13) : 0u);
    } else if (expo != 0) {
        u = sign | ((expo + 112u) << 23) | (mant << 13);
    } else {            /* subnormal: exact */
        f = (float)mant * 0x1p-24f;
        return sign ? -f : f;
    }
    memcpy(&f, &u, sizeof f);
    return f;
}

/*
 * emu_f32_to_bf16 inline, for the stores of the emulated convolutions'
 * BF16 outputs: BF16 is FP32's top half, so nearest even adds just under
 * half of the dropped 16 bits plus the kept part's last bit, on the bits
 * (a carry into the exponent is the next binade, past the largest finite
 * value Inf; subnormals round at their own step). NaN stays a quiet NaN
 * of the same sign and top payload. The same bits as emu_f32_to_bf16,
 * the reference computed in double (test_numerics compares them).
 */
static inline uint16_t
emu_f32_to_bf16_inline(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* f rounded to the nearest FP16 value (Inf past its range), as a float. */
static inline float
emu_round_f16_inline(float f)
{
    return emu_f16_to_f32_inline(emu_f32_to_f16_inline(f));
}

#endif
