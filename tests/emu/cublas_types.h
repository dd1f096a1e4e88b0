/* The element types of the cuBLAS and cuBLASLt stand-ins' GEMMs: sizes,
 * loads and stores through the core's element conversions, and the
 * rounding of FP32 operands a compute type asks for. */
#ifndef EMU_CUBLAS_TYPES_H
#define EMU_CUBLAS_TYPES_H

#include <library_types.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"

/* How FP32 operands are rounded before the multiply; ROUND_BF16X9 keeps
 * them and splits them in the product (emu_cpu_sgemm_bf16x9). */
enum operand_round { ROUND_NONE, ROUND_F16, ROUND_BF16, ROUND_TF32,
                     ROUND_BF16X9 };

/* A data type as the call log names it: "32F", "16F", "16BF". */
static inline const char *
type_name(cudaDataType t)
{
    switch (t) {
    case CUDA_R_32F: return "32F";
    case CUDA_R_16F: return "16F";
    case CUDA_R_16BF: return "16BF";
    case CUDA_R_64F: return "64F";
    default: return "other";
    }
}

static inline size_t
type_size(cudaDataType t)
{
    switch (t) {
    case CUDA_R_32F:
        return 4;
    case CUDA_R_8I:
        return 1;
    default:
        return 2;
    }
}

/* The element type of a data type (8-bit integers are read separately). */
static inline enum emu_elem
elem_of(cudaDataType t)
{
    return t == CUDA_R_16F ? EMU_ELEM_F16
           : t == CUDA_R_16BF ? EMU_ELEM_BF16
                              : EMU_ELEM_F32;
}

static inline float
load(const void *base, size_t idx, cudaDataType t)
{
    if (t == CUDA_R_8I)
        return (float)((const int8_t *)base)[idx];
    return emu_elem_load(base, idx, elem_of(t));
}

static inline void
store(void *base, size_t idx, cudaDataType t, float v)
{
    emu_elem_store(base, idx, elem_of(t), v);
}

static inline float
round_operand(float v, enum operand_round r)
{
    switch (r) {
    case ROUND_F16:
        return emu_round_f16_inline(v);
    case ROUND_BF16:
        return emu_bf16_to_f32(emu_f32_to_bf16(v));
    case ROUND_TF32:
        return emu_round_tf32(v);
    default:
        return v;
    }
}

#endif
