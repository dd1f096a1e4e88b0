/* cuBLAS's real functions: their pointer types and the table cublas.c
 * resolves once (amp_cublas_resolve, under amp_cublas_once). The hooks
 * call them; the converted steps (cublas_steps.c) issue through them. */
#ifndef AMP_CUBLAS_REAL_H
#define AMP_CUBLAS_REAL_H

#include "cublas_symbols.h"

#include <pthread.h>

#define AMP_PFN_TYPE(ret, name, params) typedef ret(*amp_pfn_##name) params;
AMP_CUBLAS_SYMBOLS(AMP_PFN_TYPE)
#undef AMP_PFN_TYPE

struct amp_cublas_fns {
#define AMP_REAL_MEMBER(ret, name, params) amp_pfn_##name name;
    AMP_CUBLAS_SYMBOLS(AMP_REAL_MEMBER)
#undef AMP_REAL_MEMBER
};

/* The real functions, NULL where the library has none. */
extern struct amp_cublas_fns amp_cublas_fn;
extern pthread_once_t amp_cublas_once;

/* Resolves amp_cublas_fn: run once, under amp_cublas_once. */
void amp_cublas_resolve(void);

#endif
