/* dlsym_check: what a program sees of dlsym and dlvsym, printed so that a
 * run under the shim can be compared line by line with a run without it:
 * lookups through RTLD_DEFAULT and RTLD_NEXT (which depend on the caller),
 * names that are not cuBLAS's on a cuBLAS handle, a failed lookup and its
 * dlerror, many threads looking names up at once, and, given a library
 * that is not NVIDIA's defining cublasSgemm_v2 (WRAPPER: a program's own
 * wrapper, a mock), the function a lookup on its handle finds, called.
 * Opens libcublas.so.13 in the global scope; links no CUDA library.
 *
 * usage: dlsym_check [WRAPPER] */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define LOOKUPS 20000

static void *cublas;

/* Names looked up from every thread, with the answer the main thread got. */
static const char *const names[] = {"cublasCreate_v2", "cublasSgemm_v2",
                                    "cublasGetVersion_v2", "no_such_symbol"};
static void *expected[sizeof names / sizeof *names];
static int mismatches;

/* puts's address as data, as dlsym gives it. */
static void *
puts_address(void)
{
    int (*f)(const char *) = puts;
    void *p;

    memcpy(&p, &f, sizeof p);
    return p;
}

static void *
lookups(void *arg)
{
    (void)arg;
    for (int i = 0; i < LOOKUPS; i++) {
        size_t k = (size_t)i % (sizeof names / sizeof *names);

        if (dlsym(cublas, names[k]) != expected[k])
            __atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* cublasSgemm_v2's parameters as the ABI passes them. */
typedef int (*sgemm_fn)(void *, int, int, int, int, int, const float *,
                        const float *, int, const float *, int,
                        const float *, float *, int);

/* The wrapper's cublasSgemm_v2 as a lookup on its handle finds it, called
 * with arguments cuBLAS would refuse (no handle): its status and how many
 * calls the wrapper counted. */
static int
wrapper_lookup(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const float one = 1.0f;
    int (*calls)(void);
    sgemm_fn sgemm;
    void *p;

    if (!lib) {
        fprintf(stderr, "dlsym_check: %s\n", dlerror());
        return -1;
    }
    p = dlsym(lib, "cublasSgemm_v2");
    memcpy(&sgemm, &p, sizeof sgemm);
    p = dlsym(lib, "sgemm_wrapper_calls");
    memcpy(&calls, &p, sizeof calls);
    if (!sgemm || !calls) {
        fprintf(stderr, "dlsym_check: %s lacks its functions\n", path);
        return -1;
    }
    printf("wrapper sgemm: status %d\n",
           sgemm(NULL, 0, 0, 1, 1, 1, &one, NULL, 1, NULL, 1, &one, NULL, 1));
    printf("wrapper calls: %d\n", calls());
    dlclose(lib);
    return 0;
}

int
main(int argc, char **argv)
{
    pthread_t t[THREADS];
    const char *err;
    void *p;

    cublas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (!cublas) {
        fprintf(stderr, "dlsym_check: %s\n", dlerror());
        return 1;
    }
    /* The C library's own functions, by name and by the program's link. */
    printf("default puts is puts: %d\n",
           dlsym(RTLD_DEFAULT, "puts") == puts_address());
    printf("next puts is puts: %d\n",
           dlsym(RTLD_NEXT, "puts") == puts_address());
    printf("versioned puts is puts: %d\n",
           dlvsym(RTLD_DEFAULT, "puts", "GLIBC_2.2.5") == puts_address());
    /* RTLD_NEXT from the program finds the first definition after it, the
     * same as RTLD_DEFAULT's when the program defines none. */
    printf("next sgemm is default sgemm: %d\n",
           dlsym(RTLD_NEXT, "cublasSgemm_v2") ==
               dlsym(RTLD_DEFAULT, "cublasSgemm_v2"));
    /* A name cuBLAS defines and the shim does not hook. */
    p = dlsym(cublas, "cublasCreate_v2");
    printf("handle create is default create: %d\n",
           p && p == dlsym(RTLD_DEFAULT, "cublasCreate_v2"));
    printf("handle create is versioned create: %d\n",
           p == dlvsym(cublas, "cublasCreate_v2", "libcublas.so.13"));
    printf("wrong version: %s\n",
           dlvsym(cublas, "cublasCreate_v2", "NO_SUCH_VERSION") ? "found"
                                                               : "null");
    err = dlerror();
    printf("dlerror: %s\n", err ? err : "(none)");
    /* A failed lookup: NULL, one error message, then none. */
    dlerror();
    printf("missing: %s\n", dlsym(cublas, "no_such_symbol") ? "found"
                                                           : "null");
    err = dlerror();
    printf("dlerror: %s\n", err ? err : "(none)");
    err = dlerror();
    printf("dlerror again: %s\n", err ? err : "(none)");
    /* A successful lookup leaves no error behind. */
    dlsym(cublas, "cublasGetVersion_v2");
    err = dlerror();
    printf("after a found name: %s\n", err ? err : "(none)");

    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        expected[k] = dlsym(cublas, names[k]);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, lookups, NULL) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("threads: %d lookups, %d answers that differ\n",
           THREADS * LOOKUPS, mismatches);
    if (argc > 1 && wrapper_lookup(argv[1]) != 0)
        return 1;
    dlclose(cublas);
    return 0;
}
