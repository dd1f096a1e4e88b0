#!/usr/bin/env bash
# The emulator's own speed: builds, then times FP32 SGEMMs of 1024^3 and
# 2048^3 and a cuDNN forward convolution (N=64, C=K=128, 28x28, 3x3) on
# the CPU device emulator (examples/speed_bench, wall clock), and NumPy's
# float32 matmul of the same sizes (Debian's python3-numpy) on the same
# machine in the same run, at the same thread count: 1, then every core.
# Prints seconds and GFLOP/s per product, the emulator's time over
# NumPy's, and the convolution's time over a GEMM of the same FLOPs (its
# GFLOP/s against the 2048^3 SGEMM's). Then the cost of converted work:
# examples/legacy_trainer's CNN, one epoch of 1024 training and 256 test
# images in batches of 256 (1 thread), bare and preloaded with the shim
# under AMPSHIM_MODE=fp16, bf16 and tf32: CPU seconds (user plus system,
# the least of --reps runs) and each mode's over bare FP32's, for the
# first epoch (every shape's first calls, measured beside FP32, among
# them) and for the next one (a run of two epochs less the run of one:
# the steady state).
# Asserts nothing.
#
# usage: scripts/bench_emu.sh [--reps N] [--only gemm|cnn]
# JOBS=N limits the build's parallel jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
reps=3
only=
while [[ $# -gt 0 ]]; do
    case $1 in
    --reps) reps=${2:?--reps needs a count}; shift 2 ;;
    --only) only=${2:?--only needs gemm or cnn}; shift 2 ;;
    *) echo "usage: scripts/bench_emu.sh [--reps N] [--only gemm|cnn]" >&2
       exit 2 ;;
    esac
done
case $only in
'' | gemm | cnn) ;;
*) echo "bench_emu: --only takes gemm or cnn" >&2; exit 2 ;;
esac
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
     "$(nproc) cores"

# cnn_run EPOCHS [VAR=VALUE...]: CPU seconds of EPOCHS epochs of the
# legacy trainer's small CNN on the emulator with the given environment,
# the least of $reps runs; the trainer's output goes to $tmp, and a report
# the environment names is removed before each run.
cnn_run() {
    "$python" - "$reps" "$tmp" "$build/examples/legacy_trainer" "$@" <<'PY'
import os, resource, subprocess, sys
reps, tmp, trainer, epochs = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                              sys.argv[4])
env = dict(os.environ)
env.update(kv.split("=", 1) for kv in sys.argv[5:])
args = [trainer, "--train", "1024", "--test", "256", "--batch-size", "256",
        "--epochs", epochs, "--seed", "3"]
best = None
for _ in range(reps):
    if "AMPSHIM_REPORT" in env and os.path.exists(env["AMPSHIM_REPORT"]):
        os.remove(env["AMPSHIM_REPORT"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(tmp, "trainer.log"), "w") as log:
        subprocess.run(args, env=env, stdout=log, stderr=log, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best = cpu if best is None else min(best, cpu)
print(f"{best:.2f}")
PY
}

# ratio A B: A / B to two places.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

bench_cnn() {
    local tmp mode one two fp32_one fp32_next next
    local -a env
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    echo
    echo "legacy_trainer's CNN on the emulator, 1024 + 256 images an epoch" \
         "(batches of 256), CPU s, least of $reps runs; next epoch: a run" \
         "of two epochs less a run of one"
    printf '%-6s %12s %8s %14s %8s\n' mode "1st epoch" "/ FP32" \
           "next epoch" "/ FP32"
    for mode in fp32 fp16 bf16 tf32; do
        env=(LD_LIBRARY_PATH="$build/tests/emu" AMPSHIM_EMU_THREADS=1)
        [[ $mode == fp32 ]] ||
            env+=(LD_PRELOAD="$build/hooks/libampshim.so" AMPSHIM_MODE=$mode
                  AMPSHIM_REPORT="$tmp/report.json")
        one=$(cnn_run 1 "${env[@]}")
        two=$(cnn_run 2 "${env[@]}")
        next=$(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.2f", a - b }')
        if [[ $mode == fp32 ]]; then
            fp32_one=$one
            fp32_next=$next
        fi
        printf '%-6s %12s %8s %14s %8s\n' "$mode" "$one" \
               "$(ratio "$one" "$fp32_one")" "$next" \
               "$(ratio "$next" "$fp32_next")"
    done
}

if [[ $only == cnn ]]; then
    bench_cnn
    exit 0
fi
echo "$reps timed calls each, after one untimed call"
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
[[ $only == gemm ]] || bench_cnn
