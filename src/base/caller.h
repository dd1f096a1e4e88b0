/* Who calls a hook, and which real function serves the call: the loaded
 * object its return address lies in (dladdr1's link map), whether that
 * object is one of NVIDIA's libraries, and which release of the hooked
 * library that object's own import names (its DT_NEEDED). The vendor
 * releases are told apart by soname: the shim converts only the releases
 * it was built for (libcublas.so.13, libcublasLt.so.13, libcudnn.so.9 and
 * its sub-libraries), since descriptor layouts differ between releases. */
#ifndef AMP_CALLER_H
#define AMP_CALLER_H

/* The libraries the hooks stand in front of. */
enum amp_lib {
    AMP_LIB_CUBLAS = 0,    /* libcublas.so.N */
    AMP_LIB_CUBLASLT,      /* libcublasLt.so.N */
    AMP_LIB_CUDNN,         /* libcudnn.so.N, libcudnn_*.so.N */
    AMP_LIB_CUDART,        /* libcudart.so.N (cudaDeviceReset) */
    AMP_LIB_COUNT,
};

/* What a file name or soname is to `lib`. */
enum amp_release {
    AMP_RELEASE_NONE = 0,  /* not a release of lib */
    AMP_RELEASE_OWN,       /* the release the shim was built for (or a
                              name without a release number) */
    AMP_RELEASE_OTHER,     /* another release: passed through */
};

/* The soname of the release of lib the shim converts: "libcublas.so.13". */
const char *amp_lib_soname(enum amp_lib lib);

/* What `name` (a soname or a file name, with or without a directory) is
 * to lib: "libcublas.so.12" is another release of AMP_LIB_CUBLAS,
 * "libcudnn_cnn.so.9" the shim's own of AMP_LIB_CUDNN. */
enum amp_release amp_lib_release(enum amp_lib lib, const char *name);

/* 1 when `name` (a soname or file name) is one of NVIDIA's libraries,
 * whose own calls of cuBLAS and cuDNN are theirs to make: cuBLAS, cuBLASLt
 * and cuBLASMp, cuDNN and its sub-libraries, cuSOLVER (and Mg, Mp),
 * cuSPARSE (and Lt), cuFFT (and w, Mp), cuRAND, cuTENSOR (and Mg), cuDSS,
 * NCCL, NVSHMEM, TensorRT (nvinfer*, nvonnxparser), NPP, nvJPEG, CUPTI, the
 * runtime and the driver. NVBLAS is not one: it runs the program's own
 * BLAS calls on cuBLAS, so its GEMMs are the program's. */
int amp_soname_nvidia(const char *name);

/* How one hooked call is served. */
struct amp_route {
    void *fn;              /* another release's function: the call goes
                              to it untouched; NULL: the shim's own
                              resolution serves the call */
    unsigned char other;   /* the caller's import names another release
                              of the library (fn may then be NULL: that
                              release lacks the function) */
    unsigned char library; /* the caller is one of NVIDIA's libraries */
};

/* The route of a call of `name`, one of lib's hooked functions, that
 * returns to `ret`: the object that contains ret, and the release of lib
 * it depends on (DT_NEEDED), whose definition its import would reach
 * without the shim. Found once per (ret, name) and kept for the process's
 * life (an object unloaded and another loaded at its address are not
 * told apart, as for call sites); `name` must be a string that lives as
 * long (the hook's name table). Lock-free after the first call. */
struct amp_route amp_route(enum amp_lib lib, const char *name,
                           const void *ret);

/* The soname of the object that contains address p (its file's name when
 * it has none; "" for the main program), or NULL when no object contains
 * it. The string lives as long as the object. */
const char *amp_object_soname_at(const void *p);

/* The call stack of a hooked call, into frames[0..max): `ret` (the
 * hook's return address), then the return addresses of the functions
 * that called its caller, outermost last; returns how many, at least 1
 * (max >= 1). The unwinder (_Unwind_Backtrace over the unwind tables)
 * walks it once per thread, return address and stack: each return
 * address's slot in memory is kept, and a later call whose slots hold
 * the same addresses takes the kept stack without a walk. A return
 * address with no unwind information on the way stands alone. */
int amp_caller_stack(const void *ret, const void **frames, int max);

/* amp_caller_stack, looking first at *hint (what it set there before on
 * this thread, or NULL) and setting *hint to where it found the stack: a
 * caller that asks for one stack again from one place skips the
 * look-up. */
int amp_caller_stack_hinted(const void *ret, const void **frames, int max,
                            const void **hint);

#endif
