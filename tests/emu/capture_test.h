/* Capture checks the emulator's tests share: a global capture begun on a
 * new stream, and the state a refused call leaves it in. */
#ifndef EMU_CAPTURE_TEST_H
#define EMU_CAPTURE_TEST_H

#include <cuda_runtime.h>

/* A new stream, capturing in global mode. */
static inline cudaStream_t
capture_begin(void)
{
    cudaStream_t s;

    assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
    assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal),
                     cudaSuccess);
    return s;
}

/* After a call the capture forbids: the capture is invalidated, ending it
 * says so; the stream is destroyed. */
static inline void
capture_expect_invalidated(cudaStream_t s)
{
    enum cudaStreamCaptureStatus st;
    cudaGraph_t graph;

    assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
    assert_int_equal(st, cudaStreamCaptureStatusInvalidated);
    assert_int_equal(cudaStreamEndCapture(s, &graph),
                     cudaErrorStreamCaptureInvalidated);
    assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

#endif
