/* carveout_check: FP32 products of a program that shares the GPU with
 * other work, as PyTorch does under its SM carve-out: a cublasSgemm_v2 on
 * a handle with cublasSetSmCountTarget, cublasLtMatmul calls whose
 * descriptor sets CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET and that give
 * cuBLASLt the program's own workspace, one with no workspace, and one
 * with atomic synchronisation (a producer GEMM that counts the chunks of
 * D it has written, as cuBLAS 12.x documents it). Each is checked element
 * by element against a double-precision reference with the tolerance
 * named on the command line (fp32, tf32, fp16, bf16 or a number).
 *
 * usage: carveout_check TOLERANCE
 *
 * Prints one line per call, then "result: ...":
 * case NAME m=M n=N k=K op=OPS status=NAME(N) err/bound=R hash=H ok|FAIL
 *      api=API class=CLASS
 * CLASS is "atomic" for a call whose descriptor took the atomic
 * synchronisation attributes, else "gemm": cuBLAS 13.1 has none of them
 * (its libcublasLt refuses attributes 27 to 30), and the program then
 * makes the call without. */
#include <cublasLt.h>
#include <cublas_v2.h>

#define EXAMPLE_PROG "carveout_check"
#include "example_util.h"

#include <inttypes.h>

/* cuBLAS 12.x's cublasLt.h: the chunks of D's rows and columns (int32_t,
 * 0: no atomic synchronisation) and the device arrays of input and output
 * counters (int32_t *). */
#define ATOMIC_SYNC_NUM_CHUNKS_D_ROWS 27
#define ATOMIC_SYNC_NUM_CHUNKS_D_COLS 28
#define ATOMIC_SYNC_OUT_COUNTERS_POINTER 30

/* The SMs left to the program's products: fewer than the device has on
 * the GPUs this runs on (an H100 has 132, an A100 108). */
#define SGEMM_SM_TARGET 100

/* The program's own cuBLASLt workspace (PyTorch gives 32 MiB on Hopper;
 * another size here, to tell it from a default). */
#define LT_WORKSPACE ((size_t)12 << 20)

static int failed;

/* The worst error / bound of C = A B (compact, column-major, A m x k, B
 * k x n), its hash, and the case line. */
static void
check_and_print(const char *name, const char *api, const char *cls, int m,
                int n, int k, const float *a, const float *b, const float *c,
                int status, const char *status_name, double tol)
{
    struct operand_view va = {a, m, 0}, vb = {b, k, 0};
    double worst = 0.0;
    uint64_t hash = 0;
    int ok;

    if (status == 0) {
        worst = gemm_worst_ratio(&va, &vb, m, n, k, c, tol);
        hash = fnv1a64(c, (size_t)m * n * 4, 0xcbf29ce484222325ull);
    }
    ok = status == 0 && worst <= 1.0;
    printf("case %s m=%d n=%d k=%d op=NN status=%s(%d) err/bound=%.3e "
           "hash=%016" PRIx64 " %s api=%s class=%s\n", name, m, n, k,
           status_name, status, worst, hash, ok ? "ok" : "FAIL", api, cls);
    failed += !ok;
}

/* ---- cublasSgemm_v2 on a handle with an SM count target ------------------- */

static void
run_sgemm(const struct tolerance *tol)
{
    const int m = 96, n = 80, k = 64;
    const float one = 1.0f, zero = 0.0f;
    uint64_t seed = 0x5a11;
    float *a = host_data((size_t)m * k, &seed);
    float *b = host_data((size_t)k * n, &seed);
    float *c = malloc((size_t)m * n * 4);
    float *da = device_copy(a, (size_t)m * k * 4);
    float *db = device_copy(b, (size_t)k * n * 4);
    float *dc = device_copy(NULL, (size_t)m * n * 4);
    cublasHandle_t h = NULL;
    cublasStatus_t s = CUBLAS_STATUS_INTERNAL_ERROR;

    if (a && b && c && da && db && dc &&
        (s = cublasCreate_v2(&h)) == CUBLAS_STATUS_SUCCESS &&
        (s = cublasSetSmCountTarget(h, SGEMM_SM_TARGET)) ==
            CUBLAS_STATUS_SUCCESS &&
        (s = cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, da,
                            m, db, k, &zero, dc, m)) ==
            CUBLAS_STATUS_SUCCESS &&
        cudaMemcpy(c, dc, (size_t)m * n * 4, cudaMemcpyDeviceToHost) !=
            cudaSuccess)
        s = CUBLAS_STATUS_INTERNAL_ERROR;
    check_and_print("sgemm_sm_target", "cublasSgemm_v2", "gemm", m, n, k, a,
                    b, c, (int)s, cublas_status_name(s), tol_factor(tol, k));
    if (h)
        cublasDestroy_v2(h);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
    free(a);
    free(b);
    free(c);
}

/* ---- cublasLtMatmul ------------------------------------------------------- */

struct lcase {
    const char *name;
    int m, n, k;
    int32_t sm_target;          /* 0: none set */
    size_t workspace;           /* the program's, 0: none */
    int atomic_sync;
};

static const struct lcase lt_cases[] = {
    /* Two calls of one shape at one site with other targets: the second
     * is not the first's. */
    {"lt_sm_target", 64, 48, 96, 96, LT_WORKSPACE, 0},
    {"lt_sm_target_again", 64, 48, 96, 64, LT_WORKSPACE, 0},
    {"lt_no_workspace", 80, 56, 72, 0, 0, 0},
    {"lt_atomic_sync", 48, 40, 64, 0, LT_WORKSPACE, 1},
};

static cublasLtMatrixLayout_t
lt_layout(int rows, int cols)
{
    cublasLtMatrixLayout_t l = NULL;

    return cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, (uint64_t)rows,
                                      (uint64_t)cols, rows) ==
                   CUBLAS_STATUS_SUCCESS
               ? l
               : NULL;
}

/* Sets the atomic synchronisation attributes (one chunk of D, its counter
 * in `counter`); 1 when the library took all three. */
static int
set_atomic_sync(cublasLtMatmulDesc_t op, int32_t *counter)
{
    int32_t one = 1;

    return cublasLtMatmulDescSetAttribute(
               op, (cublasLtMatmulDescAttributes_t)ATOMIC_SYNC_NUM_CHUNKS_D_ROWS,
               &one, sizeof(one)) == CUBLAS_STATUS_SUCCESS &&
           cublasLtMatmulDescSetAttribute(
               op, (cublasLtMatmulDescAttributes_t)ATOMIC_SYNC_NUM_CHUNKS_D_COLS,
               &one, sizeof(one)) == CUBLAS_STATUS_SUCCESS &&
           cublasLtMatmulDescSetAttribute(
               op,
               (cublasLtMatmulDescAttributes_t)ATOMIC_SYNC_OUT_COUNTERS_POINTER,
               &counter, sizeof(counter)) == CUBLAS_STATUS_SUCCESS;
}

static void
run_lt(cublasLtHandle_t lt, const struct lcase *tc, const struct tolerance *tol,
       uint64_t seed)
{
    int m = tc->m, n = tc->n, k = tc->k, atomic = 0, count = 0;
    float *a = host_data((size_t)m * k, &seed);
    float *b = host_data((size_t)k * n, &seed);
    float *d = malloc((size_t)m * n * 4);
    float *da = device_copy(a, (size_t)m * k * 4);
    float *db = device_copy(b, (size_t)k * n * 4);
    float *dd = device_copy(NULL, (size_t)m * n * 4);
    int32_t *counter = device_copy(NULL, sizeof(int32_t));
    void *work = tc->workspace ? device_copy(NULL, tc->workspace) : NULL;
    const float one = 1.0f, zero = 0.0f;
    cublasLtMatrixLayout_t la = lt_layout(m, k), lb = lt_layout(k, n);
    cublasLtMatrixLayout_t lc = lt_layout(m, n);
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t heur;
    uint64_t ws = tc->workspace;
    cublasStatus_t s = CUBLAS_STATUS_INTERNAL_ERROR;

    if (!a || !b || !d || !da || !db || !dd || !counter ||
        (tc->workspace && !work) || !la || !lb || !lc ||
        cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) !=
            CUBLAS_STATUS_SUCCESS ||
        (tc->sm_target &&
         cublasLtMatmulDescSetAttribute(op,
                                        CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
                                        &tc->sm_target,
                                        sizeof(tc->sm_target)) !=
             CUBLAS_STATUS_SUCCESS))
        goto done;
    if (tc->atomic_sync && cudaMemset(counter, 0, sizeof(*counter)) ==
                               cudaSuccess)
        atomic = set_atomic_sync(op, counter);
    /* As frameworks do: the heuristics' first answer within the
     * program's workspace. */
    cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    s = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur,
                                       &count);
    if (s == CUBLAS_STATUS_SUCCESS && count < 1)
        s = CUBLAS_STATUS_NOT_SUPPORTED;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmul(lt, op, &one, da, la, db, lb, &zero, dd, lc, dd,
                           lc, &heur.algo, work, tc->workspace, 0);
    if (s == CUBLAS_STATUS_SUCCESS &&
        cudaMemcpy(d, dd, (size_t)m * n * 4, cudaMemcpyDeviceToHost) !=
            cudaSuccess)
        s = CUBLAS_STATUS_INTERNAL_ERROR;
done:
    check_and_print(tc->name, "cublasLtMatmul", atomic ? "atomic" : "gemm",
                    m, n, k, a, b, d, (int)s, cublas_status_name(s),
                    tol_factor(tol, k));
    lt_descs_destroy(pref, op, la, lb, lc);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    cudaFree(counter);
    cudaFree(work);
    free(a);
    free(b);
    free(d);
}

int
main(int argc, char **argv)
{
    struct tolerance tol = { TOL_FP32, 0.0 };
    cublasLtHandle_t lt;
    size_t i, calls = 1 + sizeof(lt_cases) / sizeof(lt_cases[0]);

    if (argc != 2 || tol_parse(argv[1], &tol) != 0) {
        fprintf(stderr, "usage: carveout_check fp32|tf32|fp16|bf16|X\n");
        return EXIT_USAGE;
    }
    if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, EXAMPLE_PROG ": no cuBLASLt handle\n");
        return EXIT_CUDA_ERROR;
    }
    run_sgemm(&tol);
    for (i = 0; i < sizeof(lt_cases) / sizeof(lt_cases[0]); i++)
        run_lt(lt, &lt_cases[i], &tol, 0x7000u + i);
    printf("result: %zu of %zu calls within the bound\n",
           calls - (size_t)failed, calls);
    cublasLtDestroy(lt);
    return failed ? EXIT_CHECK_FAILED : EXIT_ALL_PASS;
}
