/* dlsym and dlvsym: a program that opens cuBLAS, cuBLASLt or cuDNN itself
 * (dlopen, in a local scope or not) and takes their functions from the
 * library's handle, as TensorFlow's and XLA's loaders and Python's ctypes
 * do, gets the shim's hook for each hooked name of the releases the shim
 * converts (libcublas.so.13, libcublasLt.so.13, libcudnn*.so.9), and a
 * runtime linked into the program that opens libcuda.so.1, or a loader
 * that opens it and libcudart.so.13 itself, gets the hooks of the
 * driver's functions that end a context or a stream, of its
 * cuGetProcAddress and of the runtime's cudaDeviceReset (hooks/cuda.c);
 * every
 * other lookup gets exactly what the C library gives, another release's
 * (libcublas.so.12, whose descriptors and handles are its own) included.
 * The vendor libraries' own lookups (cuDNN 9's front library takes each
 * function from its sub-libraries with dlsym) get the C library's answer
 * too: a hook there would call itself.
 *
 * A lookup through RTLD_DEFAULT or RTLD_NEXT depends on who calls (the
 * object after the caller's, the caller's namespace): those jump to the C
 * library's function with the program's return address untouched, from
 * the entry below. A lookup on a handle goes to amp_dl_on_handle, with the
 * caller's return address, which asks the C library first and replaces
 * only a vendor library's own definition of a hooked name asked for from
 * outside the vendor libraries. The shim's own lookups use amp_dlsym
 * (base/resolve.c), never these. */
#include "base/caller.h"
#include "base/resolve.h"
#include "base/shim.h"
#include "process/process.h"

#define AMP_SYMBOL_NAMES_ONLY
#include "cublas_legacy_symbols.h"
#include "cublas_symbols.h"
#include "cublaslt_symbols.h"
#include "cudnn_graph_symbols.h"
#include "cudnn_symbols.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#if defined(__x86_64__)

/* The hooks, defined in the other hook files; only their addresses are
 * taken here (the address of the first definition in the process, the
 * shim's when it is preloaded). */
#define AMP_DECLARE_HOOK(ret, name, params) void name(void);
AMP_CUBLAS_HOOKED(AMP_DECLARE_HOOK)
AMP_CUBLAS_LEGACY_HOOKED(AMP_DECLARE_HOOK)
AMP_CUBLASLT_HOOKED(AMP_DECLARE_HOOK)
AMP_CUDNN_HOOKED(AMP_DECLARE_HOOK)
AMP_CUDNN_GRAPH_HOOKED(AMP_DECLARE_HOOK)
#undef AMP_DECLARE_HOOK

/* The driver's or the runtime's hook of `name` for their definition fn,
 * or NULL (cuda.c). */
void *amp_cuda_hook_of(const char *name, const void *fn);

struct amp_dl_hook {
    const char *name;
    void (*hook)(void);
};

static const struct amp_dl_hook amp_dl_hooks[] = {
#define AMP_HOOK_ENTRY(ret, name, params) {#name, name},
    AMP_CUBLAS_HOOKED(AMP_HOOK_ENTRY)
    AMP_CUBLAS_LEGACY_HOOKED(AMP_HOOK_ENTRY)
    AMP_CUBLASLT_HOOKED(AMP_HOOK_ENTRY)
    AMP_CUDNN_HOOKED(AMP_HOOK_ENTRY)
    AMP_CUDNN_GRAPH_HOOKED(AMP_HOOK_ENTRY)
#undef AMP_HOOK_ENTRY
};

/* The libraries whose definitions the hooks stand for. */
static const enum amp_lib amp_dl_vendors[] = {
    AMP_LIB_CUBLAS, AMP_LIB_CUBLASLT, AMP_LIB_CUDNN,
};

static void (*amp_dl_hook_of(const char *name))(void)
{
    for (size_t i = 0; i < sizeof amp_dl_hooks / sizeof *amp_dl_hooks; i++)
        if (strcmp(amp_dl_hooks[i].name, name) == 0)
            return amp_dl_hooks[i].hook;
    return NULL;
}

/* Whether the code or data at p is one of the vendor libraries', in the
 * release the shim converts (`own`) or in any release. */
static int
amp_dl_in_vendor(const void *p, int own)
{
    const char *soname = amp_object_soname_at(p);

    for (size_t i = 0; soname && i < sizeof amp_dl_vendors /
                                         sizeof *amp_dl_vendors; i++) {
        enum amp_release r = amp_lib_release(amp_dl_vendors[i], soname);

        if (own ? r == AMP_RELEASE_OWN : r != AMP_RELEASE_NONE)
            return 1;
    }
    return 0;
}

/* What a lookup on a library's handle returns: the C library's answer (and
 * its dlerror state), or the hook when that answer is the definition of a
 * hooked name in a release the shim converts, the caller is not a vendor
 * library (of any release) and the shim is on. */
static void *
amp_dl_answer(void *fn, const char *name, const void *caller)
{
    void (*hook)(void);
    void *answer;
    const char *from;

    /* The driver's functions that end a context or stream, its
     * cuGetProcAddress and the runtime's cudaDeviceReset, for a caller
     * other than the driver itself (its
     * cuGetProcAddress looks itself up), the shared CUDA runtime (whose
     * resets the runtime's hooks see; it looks the driver up as it
     * loads, which must not start the shim) and the vendor libraries. */
    answer = amp_cuda_hook_of(name, fn);
    if (answer) {
        from = amp_object_soname_at(caller);
        if ((from && (strcmp(from, "libcuda.so.1") == 0 ||
                      strncmp(from, "libcudart.so", 12) == 0)) ||
            amp_dl_in_vendor(caller, 0) || amp_shim_config()->disabled)
            return fn;
        return answer;
    }
    if (!fn || !name || !(hook = amp_dl_hook_of(name)) ||
        !amp_dl_in_vendor(fn, 1) || amp_dl_in_vendor(caller, 0) ||
        amp_process_start()->disabled)
        return fn;
    memcpy(&answer, &hook, sizeof answer);
    return answer;
}

/* Before the program's own code runs, while one thread does. */
__attribute__((constructor)) static void
amp_dl_start(void)
{
    amp_real_dl_init();
}

void *amp_dl_on_handle(void *handle, const char *name, const void *caller)
    __attribute__((visibility("hidden"), used));
void *amp_dlv_on_handle(void *handle, const char *name, const char *version,
                        const void *caller)
    __attribute__((visibility("hidden"), used));

void *
amp_dl_on_handle(void *handle, const char *name, const void *caller)
{
    return amp_dl_answer(amp_real_dlsym(handle, name), name, caller);
}

void *
amp_dlv_on_handle(void *handle, const char *name, const char *version,
                  const void *caller)
{
    return amp_dl_answer(amp_real_dlvsym(handle, name, version), name,
                         caller);
}

/* The entries. Until the C library's functions are known, they are looked
 * up (arguments kept on the stack); RTLD_DEFAULT (0) and RTLD_NEXT (-1)
 * then jump to them, other handles to the C functions above with the
 * return address (at the top of the stack) as their last argument. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    movq amp_real_dlsym(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jz 2f\n"
        "1:  testq %rdi, %rdi\n"
        "    jz 3f\n"
        "    cmpq $-1, %rdi\n"
        "    je 3f\n"
        "    movq (%rsp), %rdx\n"
        "    jmp amp_dl_on_handle\n"
        "3:  jmp *%rax\n"
        "2:  pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"
        "    call amp_real_dl_init@PLT\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    movq amp_real_dlsym(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jnz 1b\n"
        "    ret\n"
        ".size dlsym, .-dlsym\n"
        ".globl dlvsym\n"
        ".type dlvsym, @function\n"
        "dlvsym:\n"
        "    movq amp_real_dlvsym(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jz 2f\n"
        "1:  testq %rdi, %rdi\n"
        "    jz 3f\n"
        "    cmpq $-1, %rdi\n"
        "    je 3f\n"
        "    movq (%rsp), %rcx\n"
        "    jmp amp_dlv_on_handle\n"
        "3:  jmp *%rax\n"
        "2:  pushq %rdi\n"
        "    pushq %rsi\n"
        "    pushq %rdx\n"
        "    call amp_real_dl_init@PLT\n"
        "    popq %rdx\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    movq amp_real_dlvsym(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jnz 1b\n"
        "    ret\n"
        ".size dlvsym, .-dlvsym\n");

#endif
