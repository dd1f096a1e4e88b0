/* event_cost: what recording a CUDA event costs the device it runs on.
 * An ordinary CUDA program: --ops small memsets queued back to back on a
 * stream of its own, timed between two events, then the same memsets
 * with an event recorded after each (timing events, then events made
 * with cudaEventDisableTiming), and the least span between two events
 * recorded back to back (what the shim takes one record's cost to be).
 * On a GPU it measures the GPU, on the emulator its model.
 *
 * usage: event_cost [--ops N]   (N from 1 to 100000, default 200)
 * Prints one line:
 *   result: ops=N op_us=T record_us=R untimed_record_us=U
 *           back_to_back_us=B
 * op_us: a memset's share of the plain run; record_us and
 * untimed_record_us: what an event recorded between two memsets adds;
 * back_to_back_us: the least of 16 spans between events recorded one
 * after the other. Exit 0, 2 on bad arguments, 3 on a CUDA error. */
#include <cuda_runtime_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPANS 16

static int
failed(const char *what, cudaError_t err)
{
    if (err == cudaSuccess)
        return 0;
    fprintf(stderr, "event_cost: %s failed: %s (%d)\n", what,
            cudaGetErrorName(err), (int)err);
    return 1;
}

/* Microseconds of `ops` 4-byte memsets on s, with an event of `flags`
 * recorded after each when `between`; -1 on a CUDA error. */
static double
run(cudaStream_t s, void *dev, int ops, int between, unsigned flags)
{
    cudaEvent_t start, stop, *mid = NULL;
    float ms = -1.0f;
    int i, bad;

    if (failed("cudaEventCreate", cudaEventCreate(&start)) ||
        failed("cudaEventCreate", cudaEventCreate(&stop)))
        return -1.0;
    if (between && !(mid = calloc((size_t)ops, sizeof *mid)))
        return -1.0;
    bad = failed("cudaEventRecord", cudaEventRecord(start, s));
    for (i = 0; !bad && i < ops; i++) {
        bad = failed("cudaMemsetAsync", cudaMemsetAsync(dev, i, 4, s));
        if (!bad && between)
            bad = failed("cudaEventCreateWithFlags",
                         cudaEventCreateWithFlags(&mid[i], flags)) ||
                  failed("cudaEventRecord", cudaEventRecord(mid[i], s));
    }
    bad = bad || failed("cudaEventRecord", cudaEventRecord(stop, s)) ||
          failed("cudaEventSynchronize", cudaEventSynchronize(stop)) ||
          failed("cudaEventElapsedTime",
                 cudaEventElapsedTime(&ms, start, stop));
    for (i = 0; mid && i < ops; i++)
        if (mid[i])
            cudaEventDestroy(mid[i]);
    free(mid);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return bad ? -1.0 : (double)ms * 1e3;
}

/* The least span, in microseconds, between two events recorded one
 * after the other on s; -1 on a CUDA error. */
static double
back_to_back(cudaStream_t s)
{
    cudaEvent_t e[SPANS + 1];
    double least = -1.0;
    int i, bad = 0;

    for (i = 0; i <= SPANS; i++)
        if (failed("cudaEventCreate", cudaEventCreate(&e[i])))
            return -1.0;
    for (i = 0; !bad && i <= SPANS; i++)
        bad = failed("cudaEventRecord", cudaEventRecord(e[i], s));
    bad = bad || failed("cudaEventSynchronize", cudaEventSynchronize(e[SPANS]));
    for (i = 0; !bad && i < SPANS; i++) {
        float ms;

        bad = failed("cudaEventElapsedTime",
                     cudaEventElapsedTime(&ms, e[i], e[i + 1]));
        if (!bad && (least < 0.0 || ms * 1e3 < least))
            least = ms * 1e3;
    }
    for (i = 0; i <= SPANS; i++)
        cudaEventDestroy(e[i]);
    return bad ? -1.0 : least;
}

int
main(int argc, char **argv)
{
    int ops = 200;
    cudaStream_t s;
    void *dev;
    double plain, timed, untimed, b2b;

    for (int i = 1; i < argc; i++) {
        char *end;

        if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
            long v = strtol(argv[++i], &end, 10);

            if (*end || v < 1 || v > 100000) {
                fprintf(stderr, "event_cost: --ops %s: expected a count "
                        "from 1 to 100000\n", argv[i]);
                return 2;
            }
            ops = (int)v;
        } else {
            fprintf(stderr, "usage: event_cost [--ops N]\n");
            return 2;
        }
    }
    if (failed("cudaStreamCreateWithFlags",
               cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) ||
        failed("cudaMalloc", cudaMalloc(&dev, 4)))
        return 3;
    /* Warm: the first run pays what a device's first work pays. */
    if (run(s, dev, ops, 0, 0) < 0.0 ||
        (plain = run(s, dev, ops, 0, 0)) < 0.0 ||
        (timed = run(s, dev, ops, 1, cudaEventDefault)) < 0.0 ||
        (untimed = run(s, dev, ops, 1, cudaEventDisableTiming)) < 0.0 ||
        (b2b = back_to_back(s)) < 0.0)
        return 3;
    printf("result: ops=%d op_us=%.3f record_us=%.3f "
           "untimed_record_us=%.3f back_to_back_us=%.3f\n",
           ops, plain / ops, (timed - plain) / ops, (untimed - plain) / ops,
           b2b);
    cudaFree(dev);
    cudaStreamDestroy(s);
    return 0;
}
