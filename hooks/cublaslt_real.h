/* cuBLASLt's real functions: their pointer types and the table cublaslt.c
 * resolves once (amp_lt_resolve, under amp_lt_once). The hook calls them;
 * the shim's own handle and steps (cublaslt_steps.c) issue through them. */
#ifndef AMP_CUBLASLT_REAL_H
#define AMP_CUBLASLT_REAL_H

#include "base/once.h"
#include "cublaslt_symbols.h"

#include <pthread.h>

#define AMP_PFN_TYPE(ret, name, params) typedef ret(*amp_pfn_##name) params;
AMP_CUBLASLT_SYMBOLS(AMP_PFN_TYPE)
#undef AMP_PFN_TYPE

struct amp_lt_fns {
#define AMP_REAL_MEMBER(ret, name, params) amp_pfn_##name name;
    AMP_CUBLASLT_SYMBOLS(AMP_REAL_MEMBER)
#undef AMP_REAL_MEMBER
};

/* The real functions, NULL where the library has none. */
extern struct amp_lt_fns amp_lt_fn;
extern struct amp_once amp_lt_once;

/* 1 when every function the converted path calls was found. */
extern int amp_lt_complete;

/* Resolves amp_lt_fn: run once, under amp_lt_once. */
void amp_lt_resolve(void);

#endif
