/* The exports of libcublasLt.so.13 that the emulator does not implement:
 * each says so on stderr the first time it is called and returns
 * CUBLAS_STATUS_NOT_SUPPORTED, whatever its real prototype. cublasLt.h is
 * not included, as its prototypes differ from these. */
#include <cublas_api.h>
#include <stdio.h>

#include "cublaslt_stubs.h"

static void
say_once(int *said, const char *name)
{
    if (__atomic_exchange_n(said, 1, __ATOMIC_RELAXED) == 0)
        fprintf(stderr, "ampshim-emu: %s is not implemented by the emulator "
                "(returns CUBLAS_STATUS_NOT_SUPPORTED)\n", name);
}

#define STUB(name)                                                           \
    cublasStatus_t name(void);                                               \
    cublasStatus_t                                                           \
    name(void)                                                               \
    {                                                                        \
        static int said;                                                     \
        say_once(&said, #name);                                              \
        return CUBLAS_STATUS_NOT_SUPPORTED;                                  \
    }

EMU_CUBLASLT_STUBS(STUB)
