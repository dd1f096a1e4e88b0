/* The parts of overhead_bench that its files share: the legacy cuBLAS API
 * (cublas.h) cannot share a file with cublas_v2.h, and the graph API's
 * set-up is a file of its own. */
#ifndef OVERHEAD_BENCH_H
#define OVERHEAD_BENCH_H

/* Tiny problems: host work dominates. */
#define OB_M 8
#define OB_N 8
#define OB_K 8
#define OB_BATCH 2

/* Legacy cublas.h: cublasInit and the operands of one cublasSgemm;
 * 0, or -1 with a message. */
int ob_legacy_setup(void);
/* Issues `calls` legacy cublasSgemm calls; the number that failed. */
long ob_legacy_issue(long calls);
void ob_legacy_teardown(void);

/* cuDNN's graph API: the forward convolution of x (1x8x8x8), w (8 3x3
 * filters) and y as one plan and variant pack; 0, or -1 with a message. */
int ob_graph_setup(void *x, void *w, void *y);
/* One cudnnBackendExecute of that plan; 0 on success. */
int ob_graph_execute(void);
void ob_graph_teardown(void);

#endif
