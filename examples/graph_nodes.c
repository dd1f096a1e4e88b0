/* graph_nodes: an ordinary FP32 cuBLAS program that captures one SGEMM
 * into a CUDA graph and reports what the graph holds and what the driver
 * lets it do with it: the nodes by type, two executable instances of the
 * graph at once (refused when the graph has memory nodes), the graph as a
 * child node of another graph (refused too, unless the memory nodes'
 * ownership moves to the parent), and a launch of an instance checked
 * against a double-precision reference. A library that adds work to the
 * captured call (the shim's conversions) shows in these lines; the GPU
 * check runs the program plain and under the shim and compares. It
 * measures: a call the driver refuses or does not implement is printed
 * with its status (cudaGetErrorName), not treated as a failure.
 *
 * By default one untimed SGEMM of the same shape, from the same call site,
 * runs before the capture (a library that treats the process's first call
 * differently then sees the captured one as a later call); --cold skips
 * it.
 *
 * usage: graph_nodes [--n N] [--tol TOL] [--cold] [--help]
 * Prints
 *   result: nodes=N kernel=K memcpy=M memset=S host=H child=G empty=E
 *           event=V mem_alloc=A mem_free=F other=O   (one line)
 *   result: instantiate=ok|STATUS instantiate_twice=ok|STATUS
 *   result: child_graph=ok|STATUS
 *   result: launch=ok|FAIL|STATUS err_over_bound=X
 *   result: child_launch=ok|FAIL|STATUS err_over_bound=X  (when the child
 *           graph instantiated)
 * nodes=STATUS and the counts "na" when the graph's nodes cannot be read;
 * "na" for what did not run. err_over_bound: the largest error of a
 * sample of C = A B (N x N x N) over its bound, TOL (fp32 by default, see
 * example_util.h) times sum |a||b|.
 * Exit status 0 when the SGEMM was captured, 2 on bad options or a failed
 * call before that (named, with its status, on stderr). */
#include <cublas_v2.h>

#define EXAMPLE_PROG "graph_nodes"
#include "example_util.h"

#define SAMPLE 48

struct gemm {
    cublasHandle_t handle;
    cudaStream_t stream;
    int n;
    float *a, *b;              /* host */
    float *da, *db, *dc;
    struct tolerance tol;
};

/* C = A B, every call of the program from this one call site (a library
 * that keeps state per call site sees the warm-up where it sees the
 * captured call). The barrier keeps the call out of tail position. */
static __attribute__((noinline)) cublasStatus_t
sgemm(const struct gemm *g)
{
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasSgemm_v2(g->handle, CUBLAS_OP_N, CUBLAS_OP_N,
                                       g->n, g->n, g->n, &one, g->da, g->n,
                                       g->db, g->n, &zero, g->dc, g->n);

    __asm__ volatile("" ::: "memory");
    return st;
}

static int
spread(int r, int count, int n)
{
    return count > 1 ? (int)((int64_t)r * (n - 1) / (count - 1)) : 0;
}

/* The largest error over bound of a SAMPLE x SAMPLE grid of dc; -1 when
 * the copy failed. */
static double
sample_error(const struct gemm *g)
{
    struct operand_view va = { g->a, g->n, 0 }, vb = { g->b, g->n, 0 };
    int count = g->n < SAMPLE ? g->n : SAMPLE;
    float *col = malloc((size_t)g->n * sizeof(float));
    double worst = 0.0;

    if (col == NULL)
        return -1.0;
    for (int cj = 0; cj < count; cj++) {
        int j = spread(cj, count, g->n);

        if (cuda_failed("cudaMemcpy",
                        cudaMemcpy(col, g->dc + (size_t)j * g->n,
                                   (size_t)g->n * sizeof(float),
                                   cudaMemcpyDeviceToHost))) {
            free(col);
            return -1.0;
        }
        for (int ci = 0; ci < count; ci++) {
            int i = spread(ci, count, g->n);
            double r = gemm_element_ratio(&va, &vb, i, j, g->n, 1.0f, 0.0f,
                                          0.0f, col[i],
                                          tol_factor(&g->tol, g->n));

            if (!(r <= worst))
                worst = r;
        }
    }
    free(col);
    return worst;
}

/* ---- what is measured ---------------------------------------------------- */

/* The graph's nodes by type, one line. */
static void
count_nodes(cudaGraph_t graph)
{
    enum { KERNEL, MEMCPY, MEMSET, HOST, CHILD, EMPTY, EVENT, MEM_ALLOC,
           MEM_FREE, OTHER, KINDS };
    size_t count[KINDS] = { 0 }, total = 0;
    cudaGraphNode_t *nodes = NULL;
    cudaError_t e;

    e = cudaGraphGetNodes(graph, NULL, &total);
    if (e == cudaSuccess && total > 0) {
        nodes = calloc(total, sizeof(*nodes));
        e = nodes ? cudaGraphGetNodes(graph, nodes, &total)
                  : cudaErrorMemoryAllocation;
    }
    for (size_t i = 0; e == cudaSuccess && i < total; i++) {
        enum cudaGraphNodeType type;

        e = cudaGraphNodeGetType(nodes[i], &type);
        if (e != cudaSuccess)
            break;
        switch (type) {
        case cudaGraphNodeTypeKernel: count[KERNEL]++; break;
        case cudaGraphNodeTypeMemcpy: count[MEMCPY]++; break;
        case cudaGraphNodeTypeMemset: count[MEMSET]++; break;
        case cudaGraphNodeTypeHost: count[HOST]++; break;
        case cudaGraphNodeTypeGraph: count[CHILD]++; break;
        case cudaGraphNodeTypeEmpty: count[EMPTY]++; break;
        case cudaGraphNodeTypeWaitEvent:
        case cudaGraphNodeTypeEventRecord: count[EVENT]++; break;
        case cudaGraphNodeTypeMemAlloc: count[MEM_ALLOC]++; break;
        case cudaGraphNodeTypeMemFree: count[MEM_FREE]++; break;
        default: count[OTHER]++; break;
        }
    }
    free(nodes);
    if (e != cudaSuccess) {
        printf("result: nodes=%s kernel=na memcpy=na memset=na host=na "
               "child=na empty=na event=na mem_alloc=na mem_free=na "
               "other=na\n", cudaGetErrorName(e));
        return;
    }
    printf("result: nodes=%zu kernel=%zu memcpy=%zu memset=%zu host=%zu "
           "child=%zu empty=%zu event=%zu mem_alloc=%zu mem_free=%zu "
           "other=%zu\n", total, count[KERNEL], count[MEMCPY], count[MEMSET],
           count[HOST], count[CHILD], count[EMPTY], count[EVENT],
           count[MEM_ALLOC], count[MEM_FREE], count[OTHER]);
}

/* Launches exec on a C filled with NaN and checks C; prints
 * "result: WHAT=ok|FAIL|STATUS err_over_bound=X". */
static void
launch_check(const struct gemm *g, cudaGraphExec_t exec, const char *what)
{
    size_t bytes = (size_t)g->n * g->n * sizeof(float);
    cudaError_t e;
    double worst;

    e = cudaMemsetAsync(g->dc, 0xff, bytes, g->stream);
    if (e == cudaSuccess)
        e = cudaGraphLaunch(exec, g->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess) {
        printf("result: %s=%s err_over_bound=na\n", what,
               cudaGetErrorName(e));
        return;
    }
    worst = sample_error(g);
    if (worst < 0.0)
        printf("result: %s=cudaMemcpy err_over_bound=na\n", what);
    else
        printf("result: %s=%s err_over_bound=%.3e\n", what,
               worst <= 1.0 ? "ok" : "FAIL", worst);
}

/* Instantiates graph twice at once, embeds it in a new graph and
 * instantiates that, launches an instance of each. */
static void
use_graph(const struct gemm *g, cudaGraph_t graph)
{
    cudaGraphExec_t first = NULL, second = NULL, parent_exec = NULL;
    cudaGraph_t parent = NULL;
    cudaGraphNode_t child;
    cudaError_t e1, e2 = cudaSuccess, ec;

    e1 = cudaGraphInstantiate(&first, graph, 0);
    if (e1 == cudaSuccess) {
        e2 = cudaGraphInstantiate(&second, graph, 0);
        if (e2 == cudaSuccess)
            cudaGraphExecDestroy(second);
    }
    printf("result: instantiate=%s instantiate_twice=%s\n",
           e1 == cudaSuccess ? "ok" : cudaGetErrorName(e1),
           e1 != cudaSuccess ? "na"
           : e2 == cudaSuccess ? "ok" : cudaGetErrorName(e2));

    ec = cudaGraphCreate(&parent, 0);
    if (ec == cudaSuccess)
        ec = cudaGraphAddChildGraphNode(&child, parent, NULL, 0, graph);
    if (ec == cudaSuccess)
        ec = cudaGraphInstantiate(&parent_exec, parent, 0);
    printf("result: child_graph=%s\n",
           ec == cudaSuccess ? "ok" : cudaGetErrorName(ec));

    if (e1 == cudaSuccess)
        launch_check(g, first, "launch");
    else
        printf("result: launch=%s err_over_bound=na\n",
               cudaGetErrorName(e1));
    if (ec == cudaSuccess)
        launch_check(g, parent_exec, "child_launch");
    if (parent_exec)
        cudaGraphExecDestroy(parent_exec);
    if (parent)
        cudaGraphDestroy(parent);
    if (first)
        cudaGraphExecDestroy(first);
}

/* ---- set-up ----------------------------------------------------------- */

static void
usage(FILE *f)
{
    fprintf(f, "usage: graph_nodes [--n N] [--tol TOL] [--cold] [--help]\n"
            "  captures one N x N x N SGEMM (default 1024) into a CUDA graph "
            "and prints\n"
            "  result: nodes=N kernel=K memcpy=M memset=S host=H child=G "
            "empty=E event=V\n"
            "          mem_alloc=A mem_free=F other=O\n"
            "  result: instantiate=ok|STATUS instantiate_twice=ok|STATUS\n"
            "  result: child_graph=ok|STATUS\n"
            "  result: launch=ok|FAIL|STATUS err_over_bound=X\n"
            "  result: child_launch=ok|FAIL|STATUS err_over_bound=X\n"
            "  --tol: fp32 (default), tf32, fp16, bf16 or a number, per "
            "term of sum |a||b|\n"
            "  --cold: no SGEMM before the capture\n"
            "  exit 0 captured, 2 usage or a failed call before that\n");
}

static int
parse_options(int argc, char **argv, struct gemm *g, int *cold)
{
    for (int i = 1; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end;

        if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 1;
        } else if (strcmp(argv[i], "--cold") == 0) {
            *cold = 1;
        } else if (strcmp(argv[i], "--n") == 0 && val) {
            long v = strtol(val, &end, 10);

            if (end == val || *end != '\0' || v < 1 || v > 32768)
                return -1;
            g->n = (int)v;
            i++;
        } else if (strcmp(argv[i], "--tol") == 0 && val) {
            if (tol_parse(val, &g->tol) != 0)
                return -1;
            i++;
        } else {
            return -1;
        }
    }
    return 0;
}

/* Handle, stream, operands (uniform in [-1, 1)); 0 or 1. */
static int
setup(struct gemm *g)
{
    size_t nn = (size_t)g->n * g->n;
    uint64_t rng = 0x6a09e667u;

    g->a = malloc(nn * sizeof(float));
    g->b = malloc(nn * sizeof(float));
    if (g->a == NULL || g->b == NULL) {
        fprintf(stderr, EXAMPLE_PROG ": out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < nn; i++)
        g->a[i] = rng_float(&rng, 1.0f);
    for (size_t i = 0; i < nn; i++)
        g->b[i] = rng_float(&rng, 1.0f);
    return cublas_failed("cublasCreate_v2", cublasCreate_v2(&g->handle)) ||
           cuda_failed("cudaStreamCreateWithFlags",
                       cudaStreamCreateWithFlags(&g->stream,
                                                 cudaStreamNonBlocking)) ||
           cublas_failed("cublasSetStream_v2",
                         cublasSetStream_v2(g->handle, g->stream)) ||
           cuda_failed("cudaMalloc", cudaMalloc((void **)&g->da, nn * 4)) ||
           cuda_failed("cudaMalloc", cudaMalloc((void **)&g->db, nn * 4)) ||
           cuda_failed("cudaMalloc", cudaMalloc((void **)&g->dc, nn * 4)) ||
           cuda_failed("cudaMemcpy", cudaMemcpy(g->da, g->a, nn * 4,
                                                cudaMemcpyHostToDevice)) ||
           cuda_failed("cudaMemcpy", cudaMemcpy(g->db, g->b, nn * 4,
                                                cudaMemcpyHostToDevice));
}

int
main(int argc, char **argv)
{
    struct gemm g = { .n = 1024, .tol = { TOL_FP32, 0.0 } };
    cudaGraph_t graph = NULL;
    cublasStatus_t st;
    cudaError_t e;
    int cold = 0, opt;

    /* Each line out as it is printed, whatever happens next. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    opt = parse_options(argc, argv, &g, &cold);
    if (opt != 0) {
        if (opt < 0)
            usage(stderr);
        return opt < 0 ? EXIT_USAGE : EXIT_ALL_PASS;
    }
    if (setup(&g))
        return EXIT_USAGE;
    if (!cold && (cublas_failed("cublasSgemm_v2", sgemm(&g)) ||
                  cuda_failed("cudaStreamSynchronize",
                              cudaStreamSynchronize(g.stream))))
        return EXIT_USAGE;
    if (cuda_failed("cudaStreamBeginCapture",
                    cudaStreamBeginCapture(g.stream,
                                           cudaStreamCaptureModeGlobal)))
        return EXIT_USAGE;
    st = sgemm(&g);
    e = cudaStreamEndCapture(g.stream, &graph);
    if (cublas_failed("cublasSgemm_v2 (captured)", st) ||
        cuda_failed("cudaStreamEndCapture", e))
        return EXIT_USAGE;
    count_nodes(graph);
    use_graph(&g, graph);
    cudaGraphDestroy(graph);
    cublasDestroy_v2(g.handle);
    cudaStreamDestroy(g.stream);
    cudaFree(g.da);
    cudaFree(g.db);
    cudaFree(g.dc);
    free(g.a);
    free(g.b);
    return EXIT_ALL_PASS;
}
