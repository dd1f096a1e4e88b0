/* The parts of overhead_bench that its two files share: the legacy
 * cuBLAS API (cublas.h) cannot share a file with cublas_v2.h. */
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

#endif
