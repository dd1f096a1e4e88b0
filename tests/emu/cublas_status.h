/* Status names and sentences shared by the cuBLAS and cuBLASLt stand-ins
 * (both libraries give the same ones; each links its own copy). */
#ifndef EMU_CUBLAS_STATUS_H
#define EMU_CUBLAS_STATUS_H

#include <cublas_api.h>

/* "CUBLAS_STATUS_..." for a known status, else "unrecognized status". */
const char *emu_blas_status_name(cublasStatus_t status);

/* The sentence the real libraries give, else "unrecognized status". */
const char *emu_blas_status_text(cublasStatus_t status);

#endif
