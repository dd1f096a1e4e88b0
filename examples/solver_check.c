/* solver_check: an ordinary FP32 cuSOLVER program: a Cholesky factorisation
 * (cusolverDnSpotrf, lower) of a well-conditioned SPD matrix and a
 * symmetric eigendecomposition (cusolverDnSsyevd, vectors, lower) of the
 * same matrix, each checked on the host in double. cuSOLVER calls cuBLAS
 * itself (cublasSgemm_v2 and others through its PLT), so a library that
 * replaces those calls changes these results: the GPU check runs this
 * program plain and under the shim and compares the residuals. It
 * measures and does not judge.
 *
 * cuSOLVER is opened at run time (dlopen "libcusolver.so.12", RTLD_NOW,
 * or the file --library names), so the program builds and runs where it
 * is absent: then it prints "skip: REASON" and exits 77. It skips too when
 * cusolverDnCreate answers CUSOLVER_STATUS_NOT_INITIALIZED, cuSOLVER's
 * word for a CUDA runtime it could not start on the device: the real
 * library on the emulator, which cannot load its kernels.
 *
 * usage: solver_check [--n N] [--reps R] [--library FILE] [--help]
 * Prints
 *   result: routine=potrf n=N info=I residual=R ms=T
 *   result: routine=syevd n=N info=I residual=R orth=O ms=T
 * residual: ||A - L L^T||_F / ||A||_F, and ||A V - V diag(w)||_F / ||A||_F;
 * orth: ||V^T V - I||_F / sqrt(n); ms: the shortest device time of the
 * routine (CUDA events) over R calls on fresh copies of A (default 3).
 * Exit status 0 when both ran, 77 when cuSOLVER is absent, 2 on bad
 * options, 3 on a failed call (named, with its status, on stderr). */
#include <cusolverDn.h>

#define EXAMPLE_PROG "solver_check"
#include "example_util.h"

#include <dlfcn.h>

#define EXIT_SKIP 77
#define SOLVER_SONAME "libcusolver.so.12"

/* The entry points, typed by cusolverDn.h's own prototypes. */
struct solver {
    void *lib;
    __typeof__(cusolverDnCreate) *create;
    __typeof__(cusolverDnSetStream) *set_stream;
    __typeof__(cusolverDnSpotrf_bufferSize) *potrf_buffer_size;
    __typeof__(cusolverDnSpotrf) *potrf;
    __typeof__(cusolverDnSsyevd_bufferSize) *syevd_buffer_size;
    __typeof__(cusolverDnSsyevd) *syevd;
    __typeof__(cusolverDnDestroy) *destroy;
};

static const char *
solver_status_name(cusolverStatus_t s)
{
    switch (s) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED:
        return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE:
        return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH:
        return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED:
        return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR:
        return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED:
        return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_INVALID_WORKSPACE:
        return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default: break;
    }
    return "CUSOLVER_STATUS_OTHER";
}

static int
solver_failed(const char *what, cusolverStatus_t s)
{
    if (s == CUSOLVER_STATUS_SUCCESS)
        return 0;
    fprintf(stderr, EXAMPLE_PROG ": %s failed: %s (%d)\n", what,
            solver_status_name(s), (int)s);
    return 1;
}

/* Opens cuSOLVER from `library` and takes the entry points; 0, or -1
 * after printing the skip line. */
static int
solver_open(struct solver *sv, const char *library)
{
    static const char *const names[] = {
        "cusolverDnCreate", "cusolverDnSetStream",
        "cusolverDnSpotrf_bufferSize", "cusolverDnSpotrf",
        "cusolverDnSsyevd_bufferSize", "cusolverDnSsyevd",
        "cusolverDnDestroy",
    };
    void *fn[sizeof(names) / sizeof(names[0])];

    sv->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (sv->lib == NULL) {
        printf("skip: %s not found (%s)\n", library, dlerror());
        return -1;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        dlerror();
        fn[i] = dlsym(sv->lib, names[i]);
        if (fn[i] == NULL) {
            const char *why = dlerror();

            printf("skip: %s not in %s (%s)\n", names[i], library,
                   why ? why : "NULL");
            return -1;
        }
    }
    /* POSIX: a function pointer round-trips through void *. */
    memcpy(&sv->create, &fn[0], sizeof(void *));
    memcpy(&sv->set_stream, &fn[1], sizeof(void *));
    memcpy(&sv->potrf_buffer_size, &fn[2], sizeof(void *));
    memcpy(&sv->potrf, &fn[3], sizeof(void *));
    memcpy(&sv->syevd_buffer_size, &fn[4], sizeof(void *));
    memcpy(&sv->syevd, &fn[5], sizeof(void *));
    memcpy(&sv->destroy, &fn[6], sizeof(void *));
    return 0;
}

/* ---- the matrix and the host checks ------------------------------------- */

/* Symmetric, entries uniform in [-1/2, 1/2) off the diagonal, 2 sqrt(n)
 * plus the same on it: the off-diagonal part's eigenvalues lie within
 * about 0.58 sqrt(n) of 0, so A's lie in about [1.4, 2.6] sqrt(n) (SPD,
 * condition number under 2). Column-major, lda n. */
static void
make_spd(float *a, int n, uint64_t *rng)
{
    float diag = 2.0f * sqrtf((float)n);

    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) {
            float v = rng_float(rng, 0.5f);

            if (i == j)
                v += diag;
            a[(size_t)j * n + i] = v;
            a[(size_t)i * n + j] = v;
        }
}

static double
frobenius(const float *a, int n)
{
    double s = 0.0;

    for (size_t i = 0; i < (size_t)n * n; i++)
        s += (double)a[i] * a[i];
    return sqrt(s);
}

/* The host checks take columns (or rows) a block at a time, so the block
 * stays in cache while the rest of the matrix streams past it. */
#define CHECK_BLOCK 16

/* x . y over len terms, in four partial sums (for the pipeline). */
static double
dot(const double *x, const double *y, int len)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int k = 0;

    for (; k + 4 <= len; k += 4) {
        s0 += x[k] * y[k];
        s1 += x[k + 1] * y[k + 1];
        s2 += x[k + 2] * y[k + 2];
        s3 += x[k + 3] * y[k + 3];
    }
    for (; k < len; k++)
        s0 += x[k] * y[k];
    return (s0 + s1) + (s2 + s3);
}

/* A double copy of the n x n matrix x, transposed if asked; NULL when out
 * of memory. */
static double *
to_double(const float *x, int n, int transpose)
{
    double *d = malloc((size_t)n * n * sizeof(double));

    if (d == NULL)
        return NULL;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            d[transpose ? (size_t)i * n + j : (size_t)j * n + i] =
                x[(size_t)j * n + i];
    return d;
}

/* ||A - L L^T||_F / ||A||_F with L the lower triangle of l (the upper
 * triangle of l is not read): the lower half of the symmetric
 * difference, off-diagonal terms counted twice; NaN when out of
 * memory. */
static double
potrf_residual(const float *a, const float *l, int n)
{
    double *lt = to_double(l, n, 1), s = 0.0; /* row i of L at lt + i n */

    if (lt == NULL)
        return NAN;
    for (int j0 = 0; j0 < n; j0 += CHECK_BLOCK)
        for (int i = j0; i < n; i++)
            for (int j = j0; j < j0 + CHECK_BLOCK && j <= i; j++) {
                double d = (double)a[(size_t)j * n + i] -
                           dot(lt + (size_t)i * n, lt + (size_t)j * n, j + 1);

                s += (i == j ? 1.0 : 2.0) * d * d;
            }
    free(lt);
    return sqrt(s) / frobenius(a, n);
}

/* ||A V - V diag(w)||_F / ||A||_F: A is symmetric, so (A V)(i, j) is
 * column i of A dot column j of V. NaN when out of memory. */
static double
syevd_residual(const float *a, const float *v, const float *w, int n)
{
    double *ad = to_double(a, n, 0), *vd = to_double(v, n, 0), s = 0.0;

    if (ad == NULL || vd == NULL) {
        free(ad);
        free(vd);
        return NAN;
    }
    for (int j0 = 0; j0 < n; j0 += CHECK_BLOCK)
        for (int i = 0; i < n; i++)
            for (int j = j0; j < j0 + CHECK_BLOCK && j < n; j++) {
                double d = dot(ad + (size_t)i * n, vd + (size_t)j * n, n) -
                           (double)w[j] * vd[(size_t)j * n + i];

                s += d * d;
            }
    free(ad);
    free(vd);
    return sqrt(s) / frobenius(a, n);
}

/* ||V^T V - I||_F / sqrt(n): the column dot products, lower half; NaN
 * when out of memory. */
static double
orthogonality(const float *v, int n)
{
    double *vd = to_double(v, n, 0), s = 0.0;

    if (vd == NULL)
        return NAN;
    for (int j0 = 0; j0 < n; j0 += CHECK_BLOCK)
        for (int i = j0; i < n; i++)
            for (int j = j0; j < j0 + CHECK_BLOCK && j <= i; j++) {
                double d = dot(vd + (size_t)i * n, vd + (size_t)j * n, n) -
                           (i == j ? 1.0 : 0.0);

                s += (i == j ? 1.0 : 2.0) * d * d;
            }
    free(vd);
    return sqrt(s) / sqrt((double)n);
}

/* ---- the device runs ------------------------------------------------------ */

struct run {
    struct solver *sv;
    cusolverDnHandle_t handle;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    int n, reps;
    float *d_a0, *d_a, *d_w, *d_work;
    int *d_info;
};

/* A fresh copy of A in d_a, then start recorded. */
static int
run_begin(struct run *r)
{
    size_t bytes = (size_t)r->n * r->n * sizeof(float);

    return cuda_failed("cudaMemcpyAsync",
                       cudaMemcpyAsync(r->d_a, r->d_a0, bytes,
                                       cudaMemcpyDeviceToDevice, r->stream)) ||
           cuda_failed("cudaEventRecord",
                       cudaEventRecord(r->start, r->stream));
}

/* stop recorded, waited for; *ms lowered to the call's time and *info
 * read. */
static int
run_end(struct run *r, float *ms, int *info)
{
    float t = 0.0f;

    if (cuda_failed("cudaEventRecord", cudaEventRecord(r->stop, r->stream)) ||
        cuda_failed("cudaEventSynchronize", cudaEventSynchronize(r->stop)) ||
        cuda_failed("cudaEventElapsedTime",
                    cudaEventElapsedTime(&t, r->start, r->stop)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(info, r->d_info, sizeof(int),
                                             cudaMemcpyDeviceToHost)))
        return 1;
    if (t < *ms)
        *ms = t;
    return 0;
}

static int
run_potrf(struct run *r, const float *a, float *out)
{
    size_t nn = (size_t)r->n * r->n;
    float ms = INFINITY;
    int lwork = 0, info = -1;

    if (solver_failed("cusolverDnSpotrf_bufferSize",
                      r->sv->potrf_buffer_size(r->handle,
                                               CUBLAS_FILL_MODE_LOWER, r->n,
                                               r->d_a, r->n, &lwork)) ||
        cuda_failed("cudaMalloc",
                    cudaMalloc((void **)&r->d_work,
                               (size_t)(lwork > 0 ? lwork : 1) *
                                   sizeof(float))))
        return 1;
    for (int rep = 0; rep < r->reps; rep++)
        if (run_begin(r) ||
            solver_failed("cusolverDnSpotrf",
                          r->sv->potrf(r->handle, CUBLAS_FILL_MODE_LOWER,
                                       r->n, r->d_a, r->n, r->d_work, lwork,
                                       r->d_info)) ||
            run_end(r, &ms, &info))
            return 1;
    cudaFree(r->d_work);
    r->d_work = NULL;
    if (cuda_failed("cudaMemcpy", cudaMemcpy(out, r->d_a, nn * sizeof(float),
                                             cudaMemcpyDeviceToHost)))
        return 1;
    printf("result: routine=potrf n=%d info=%d residual=%.3e ms=%.3f\n",
           r->n, info, potrf_residual(a, out, r->n), ms);
    return 0;
}

static int
run_syevd(struct run *r, const float *a, float *out)
{
    size_t nn = (size_t)r->n * r->n;
    float ms = INFINITY, *w = malloc((size_t)r->n * sizeof(float));
    int lwork = 0, info = -1, rc = 1;

    if (w == NULL)
        return 1;
    if (solver_failed("cusolverDnSsyevd_bufferSize",
                      r->sv->syevd_buffer_size(r->handle,
                                               CUSOLVER_EIG_MODE_VECTOR,
                                               CUBLAS_FILL_MODE_LOWER, r->n,
                                               r->d_a, r->n, r->d_w,
                                               &lwork)) ||
        cuda_failed("cudaMalloc",
                    cudaMalloc((void **)&r->d_work,
                               (size_t)(lwork > 0 ? lwork : 1) *
                                   sizeof(float))))
        goto out;
    for (int rep = 0; rep < r->reps; rep++)
        if (run_begin(r) ||
            solver_failed("cusolverDnSsyevd",
                          r->sv->syevd(r->handle, CUSOLVER_EIG_MODE_VECTOR,
                                       CUBLAS_FILL_MODE_LOWER, r->n, r->d_a,
                                       r->n, r->d_w, r->d_work, lwork,
                                       r->d_info)) ||
            run_end(r, &ms, &info))
            goto out;
    if (cuda_failed("cudaMemcpy", cudaMemcpy(out, r->d_a, nn * sizeof(float),
                                             cudaMemcpyDeviceToHost)) ||
        cuda_failed("cudaMemcpy",
                    cudaMemcpy(w, r->d_w, (size_t)r->n * sizeof(float),
                               cudaMemcpyDeviceToHost)))
        goto out;
    printf("result: routine=syevd n=%d info=%d residual=%.3e orth=%.3e "
           "ms=%.3f\n", r->n, info, syevd_residual(a, out, w, r->n),
           orthogonality(out, r->n), ms);
    rc = 0;
out:
    free(w);
    cudaFree(r->d_work);
    r->d_work = NULL;
    return rc;
}

static void
usage(FILE *f)
{
    fprintf(f, "usage: solver_check [--n N] [--reps R] [--library FILE] "
            "[--help]\n"
            "  cusolverDnSpotrf and cusolverDnSsyevd of an N x N SPD matrix "
            "(default 1024),\n"
            "  checked on the host in double; the shortest of R timed calls "
            "(default 3).\n"
            "  result: routine=potrf n=N info=I residual=R ms=T\n"
            "  result: routine=syevd n=N info=I residual=R orth=O ms=T\n"
            "  --library: the file to dlopen (default " SOLVER_SONAME ")\n"
            "  exit 0 ran, 77 no cuSOLVER (or none that starts), 2 usage, "
            "3 a failed call\n");
}

int
main(int argc, char **argv)
{
    struct solver sv;
    struct run r = { .sv = &sv, .n = 1024, .reps = 3 };
    const char *library = SOLVER_SONAME;
    cusolverStatus_t st;
    uint64_t rng = 0x5eed50u;
    float *a = NULL, *out = NULL;
    size_t bytes;
    int rc = EXIT_CUDA_ERROR;

    /* Each line out as it is printed, whatever happens next. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return EXIT_ALL_PASS;
        }
        if (i + 1 < argc && strcmp(argv[i], "--n") == 0 &&
            parse_int_range(argv[i + 1], 1, 32768, &r.n) == 0) {
            i++;
        } else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0 &&
                   parse_int_range(argv[i + 1], 1, 1000, &r.reps) == 0) {
            i++;
        } else if (i + 1 < argc && strcmp(argv[i], "--library") == 0) {
            library = argv[++i];
        } else {
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (solver_open(&sv, library) != 0)
        return EXIT_SKIP;
    bytes = (size_t)r.n * r.n * sizeof(float);
    a = malloc(bytes);
    out = malloc(bytes);
    if (a == NULL || out == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of host memory\n");
        goto out;
    }
    make_spd(a, r.n, &rng);
    if (cuda_failed("cudaStreamCreate", cudaStreamCreate(&r.stream)) ||
        cuda_failed("cudaEventCreate", cudaEventCreate(&r.start)) ||
        cuda_failed("cudaEventCreate", cudaEventCreate(&r.stop)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&r.d_a0, bytes)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&r.d_a, bytes)) ||
        cuda_failed("cudaMalloc",
                    cudaMalloc((void **)&r.d_w, (size_t)r.n * 4)) ||
        cuda_failed("cudaMalloc", cudaMalloc((void **)&r.d_info, 4)) ||
        cuda_failed("cudaMemcpy", cudaMemcpy(r.d_a0, a, bytes,
                                             cudaMemcpyHostToDevice)))
        goto out;
    st = sv.create(&r.handle);
    if (st == CUSOLVER_STATUS_NOT_INITIALIZED) {
        printf("skip: cusolverDnCreate: %s (%d): cuSOLVER could not start "
               "the CUDA runtime on this device\n", solver_status_name(st),
               (int)st);
        rc = EXIT_SKIP;
        goto out;
    }
    if (solver_failed("cusolverDnCreate", st))
        goto out;
    if (solver_failed("cusolverDnSetStream",
                      sv.set_stream(r.handle, r.stream)) ||
        run_potrf(&r, a, out) || run_syevd(&r, a, out))
        goto destroy;
    rc = EXIT_ALL_PASS;
destroy:
    if (solver_failed("cusolverDnDestroy", sv.destroy(r.handle)))
        rc = EXIT_CUDA_ERROR;
out:
    cudaFree(r.d_a0);
    cudaFree(r.d_a);
    cudaFree(r.d_w);
    cudaFree(r.d_info);
    free(a);
    free(out);
    return rc;
}
