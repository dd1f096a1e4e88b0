#!/usr/bin/env bash
# The emulator's own speed: builds, then times FP32 SGEMMs of 1024^3 and
# 2048^3 and a cuDNN forward convolution (N=64, C=K=128, 28x28, 3x3) on
# the CPU device emulator (examples/speed_bench, wall clock), and NumPy's
# float32 matmul of the same sizes (Debian's python3-numpy) on the same
# machine in the same run, at the same thread count: 1, then every core.
# Prints seconds and GFLOP/s per product, the emulator's time over
# NumPy's, and the convolution's time over a GEMM of the same FLOPs (its
# GFLOP/s against the 2048^3 SGEMM's). Asserts nothing.
#
# usage: scripts/bench_emu.sh [--reps N]
# JOBS=N limits the build's parallel jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
reps=3
while [[ $# -gt 0 ]]; do
    case $1 in
    --reps) reps=${2:?--reps needs a count}; shift 2 ;;
    *) echo "usage: scripts/bench_emu.sh [--reps N]" >&2; exit 2 ;;
    esac
done
python=/usr/bin/python3
if ! "$python" -c 'import numpy' 2>/dev/null; then
    echo "bench_emu: $python has no numpy (Debian: apt-get install" \
         "python3-numpy)" >&2
    exit 1
fi

"$root/scripts/build.sh" "$build" gcc >/dev/null

numpy_gemm() {
    OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 "$python" - "$2" "$reps" <<'PY'
import sys, time
import numpy as np
n, reps = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
a = rng.random((n, n), dtype=np.float32) - 0.5
b = rng.random((n, n), dtype=np.float32) - 0.5
a @ b
t = time.perf_counter()
for _ in range(reps):
    a @ b
print(f"{(time.perf_counter() - t) / reps:.6f}")
PY
}

# field LINE KEY: the value of KEY=... in a speed_bench line.
field() { sed -E "s/.* $2=([^ ]+).*/\1/" <<<"$1"; }

echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
     "$(nproc) cores; $reps timed calls each, after one untimed call"
printf '%-8s %-26s %10s %9s %10s %9s %8s\n' threads product "emu s" "emu GF/s" \
       "numpy s" "numpy GF" "emu/np"
for threads in 1 "$(nproc)"; do
    out=$(AMPSHIM_EMU_THREADS=$threads LD_LIBRARY_PATH=$build/tests/emu \
          "$build/examples/speed_bench" --reps "$reps" --gemm 1024 \
          --gemm 2048 --conv 64,128,128,28,28,3)
    gemm2048=
    while read -r line; do
        kind=${line%% *}
        s=$(field "$line" seconds) gf=$(field "$line" gflops)
        if [[ $kind == gemm ]]; then
            n=$(field "$line" m)
            np=$(numpy_gemm "$threads" "$n")
            npgf=$(awk -v n="$n" -v t="$np" 'BEGIN { printf "%.2f", 2*n*n*n/t/1e9 }')
            ratio=$(awk -v a="$s" -v b="$np" 'BEGIN { printf "%.2f", a/b }')
            printf '%-8s %-26s %10s %9s %10s %9s %8s\n' "$threads" \
                   "sgemm ${n}^3" "$s" "$gf" "$np" "$npgf" "$ratio"
            [[ $n == 2048 ]] && gemm2048=$gf
        else
            ratio=$(awk -v a="$gemm2048" -v b="$gf" 'BEGIN { printf "%.2f", a/b }')
            printf '%-8s %-26s %10s %9s %10s %9s %8s\n' "$threads" \
                   "conv 64x128x28x28 k128 3x3" "$s" "$gf" - - -
            echo "         convolution over a GEMM of the same FLOPs" \
                 "(2048^3 SGEMM's GFLOP/s): ${ratio}x"
        fi
    done <<<"$out"
done
