#!/usr/bin/env python3
"""cupy_checks: an FP32 cupy.matmul and an FP32 cupy.linalg.solve, timed
on the GPU, each with its error measured in float64."""
import argparse
import sys

SKIP = 77

DESCRIPTION = """\
Times FP32 CuPy operations on the GPU (CUDA events around --reps calls
after one untimed call) and measures their error in float64. Prints one
line per operation on stdout:

  result: framework=cupy op=matmul n=N ms=X rel_err=E
  result: framework=cupy op=solve n=N ms=X residual=R

X is the mean time of one call in milliseconds.
matmul: C = A B of n x n FP32 matrices with entries uniform in [-1, 1);
  E = ||C - C64||_F / ||C64||_F over a sample of C's rows (all rows up to
  n = 1024, else 256 rows spread over C), C64 the float64 product of the
  same FP32 inputs.
solve: x = solve(A, b) (LU with partial pivoting in cuSOLVER), A n x n and
  b of n, FP32, uniform in [-1, 1); R = ||A x - b|| / (||A|| ||x|| + ||b||)
  in the infinity norm, computed in float64: a backward error, of the
  order of FP32's rounding unit (6e-8) or below, whatever A's condition.

The inputs come from NumPy generators seeded with --seed (one for each
operation), so every run sees the same matrices.

exit status:
  0   the operations ran and their lines were printed
  77  skipped, with a line 'skip: REASON' on stdout: cupy not importable
      or no CUDA device
  2   bad arguments
  other  an error, with its traceback on stderr
"""

FULL = {'n': 8192, 'solve_n': 4096, 'reps': 10}
TINY = {'n': 64, 'solve_n': 64, 'reps': 3}
# Rows of the matmul's product checked in float64 beyond this size.
SAMPLE_ROWS = 256
ALL_ROWS_UP_TO = 1024


def skip(reason):
    print('skip: ' + reason, flush=True)
    sys.exit(SKIP)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog='cupy_checks.py', description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--op', choices=('all', 'matmul', 'solve'),
                   default='all', help='operations to run (default all)')
    p.add_argument('--size', choices=('full', 'tiny'), default='full',
                   help='default sizes: full: matmul 8192, solve 4096, '
                        '10 reps; tiny: 64, 64, 3 (default full)')
    p.add_argument('--n', type=int, help="the matmul's n")
    p.add_argument('--solve-n', type=int, help="the solve's n")
    p.add_argument('--reps', type=int, help='timed calls of each operation')
    p.add_argument('--seed', type=int, default=0,
                   help='seed of the inputs (default 0)')
    args = p.parse_args(argv)
    sizes = FULL if args.size == 'full' else TINY
    for name in ('n', 'solve_n', 'reps'):
        if getattr(args, name) is None:
            setattr(args, name, sizes[name])
        if getattr(args, name) < 1:
            p.error('--%s must be at least 1' % name.replace('_', '-'))
    return args


def uniform(np, rng, shape):
    return rng.random(shape, dtype=np.float32) * np.float32(2) - \
        np.float32(1)


def time_calls(cp, call, reps):
    """Mean milliseconds of one call over reps calls, after one untimed
    call; returns that and the last call's result."""
    out = call()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(reps):
        out = call()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / reps, out


def check_matmul(cp, np, rng, n, reps):
    a = cp.asarray(uniform(np, rng, (n, n)))
    b = cp.asarray(uniform(np, rng, (n, n)))
    ms, c = time_calls(cp, lambda: cp.matmul(a, b), reps)
    if n <= ALL_ROWS_UP_TO:
        rows = cp.arange(n)
    else:
        rows = cp.arange(SAMPLE_ROWS) * (n // SAMPLE_ROWS)
    ref = cp.matmul(a[rows].astype(cp.float64), b.astype(cp.float64))
    diff = c[rows].astype(cp.float64) - ref
    err = float(cp.linalg.norm(diff) / cp.linalg.norm(ref))
    print('result: framework=cupy op=matmul n=%d ms=%.3f rel_err=%.3g' %
          (n, ms, err), flush=True)


def check_solve(cp, np, rng, n, reps):
    a = cp.asarray(uniform(np, rng, (n, n)))
    b = cp.asarray(uniform(np, rng, (n,)))
    ms, x = time_calls(cp, lambda: cp.linalg.solve(a, b), reps)
    a64, x64, b64 = (v.astype(cp.float64) for v in (a, x, b))
    r = cp.matmul(a64, x64) - b64
    norm_a = cp.abs(a64).sum(axis=1).max()
    scale = norm_a * cp.abs(x64).max() + cp.abs(b64).max()
    residual = float(cp.abs(r).max() / scale)
    print('result: framework=cupy op=solve n=%d ms=%.3f residual=%.3g' %
          (n, ms, residual), flush=True)


def main(argv):
    args = parse_args(argv)
    try:
        import numpy as np
        import cupy as cp
    except Exception as e:
        skip('cupy not importable: %s: %s' % (type(e).__name__, e))
    try:
        devices = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        skip('no CUDA device for cupy: %s: %s' % (type(e).__name__, e))
    if devices < 1:
        skip('no CUDA device for cupy')
    if args.op in ('all', 'matmul'):
        rng = np.random.default_rng([args.seed, 0])
        check_matmul(cp, np, rng, args.n, args.reps)
    if args.op in ('all', 'solve'):
        rng = np.random.default_rng([args.seed, 1])
        check_solve(cp, np, rng, args.solve_n, args.reps)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
