#!/usr/bin/env python3
"""ctypes_sgemm: a Python program that calls cuBLAS through ctypes (the
libraries opened in a local scope, every function looked up on its handle),
as Python bindings without a compiled extension do. One 256x256x256 SGEMM
of fixed data; prints its status and the largest difference from NumPy's
float64 product, relative to the largest element of that product."""
import ctypes
import sys

import numpy as np

N = 256


def main():
    rt = ctypes.CDLL('libcudart.so.13')
    blas = ctypes.CDLL('libcublas.so.13')
    i = np.arange(N * N, dtype=np.int64)
    a = ((i * 7919) % 1000 / 1000.0 - 0.5).astype(np.float32)
    b = ((i * 104729) % 1000 / 1000.0 - 0.5).astype(np.float32)
    c = np.zeros(N * N, dtype=np.float32)
    size = ctypes.c_size_t(a.nbytes)
    ptrs = [ctypes.c_void_p() for _ in range(3)]
    for p in ptrs:
        if rt.cudaMalloc(ctypes.byref(p), size) != 0:
            sys.exit('ctypes_sgemm: cudaMalloc failed')
    h2d, d2h = 1, 2
    for p, host in zip(ptrs[:2], (a, b)):
        if rt.cudaMemcpy(p, host.ctypes.data_as(ctypes.c_void_p), size,
                         h2d) != 0:
            sys.exit('ctypes_sgemm: cudaMemcpy failed')
    handle = ctypes.c_void_p()
    if blas.cublasCreate_v2(ctypes.byref(handle)) != 0:
        sys.exit('ctypes_sgemm: cublasCreate_v2 failed')
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
    status = blas.cublasSgemm_v2(handle, 0, 0, N, N, N, ctypes.byref(alpha),
                                 ptrs[0], N, ptrs[1], N, ctypes.byref(beta),
                                 ptrs[2], N)
    rt.cudaMemcpy(c.ctypes.data_as(ctypes.c_void_p), ptrs[2], size, d2h)
    blas.cublasDestroy_v2(handle)
    for p in ptrs:
        rt.cudaFree(p)
    # Column-major: C = A B is, in row-major NumPy terms, C^T = B^T A^T.
    ref = (b.reshape(N, N).astype(np.float64) @
           a.reshape(N, N).astype(np.float64)).ravel()
    err = np.max(np.abs(c - ref)) / np.max(np.abs(ref))
    print('status=%d relerr=%.3e' % (status, err))
    return 0 if status == 0 else 1


if __name__ == '__main__':
    sys.exit(main())
