#!/usr/bin/env bash
# The shim's host cost per hooked call as the device falls behind the
# host: runs examples/framework (one GEMM wrapper, cuBLASLt Linear
# layers, graph-API convolution plans, a backward thread, captured steps)
# under valgrind on the CPU device emulator with the device running
# behind the host (AMPSHIM_EMU_BEHIND) at each queue depth asked, and
# prints the instructions executed in the shim's own code per hooked call
# (cublasSgemm_v2, cublasLtMatmul, cudnnBackendExecute). It asserts
# nothing.
#
# usage: scripts/bench_depth.sh [--depths "1 500"] [--setting SETTING]
#                               [--steps "2 5"]
#   SETTING: an AMPSHIM_MODE, fp16 by default (every call converted and
#   timed, every convolution's non-finite check in a result slot), or
#   auto (an auto policy for GEMMs and convolutions).
#
# Method (docs/benchmarks.md): the program runs twice per depth, with the
# two --steps counts, each run measured by scripts/depth_cost.sh (under
# cachegrind; its header says how); the difference between the two runs'
# instructions in the shim's own code over the difference in hooked calls
# is the cost of one more warm-up call: start-up, set-up and exit cancel
# out. JOBS=N limits the build's jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
depths="1 500"
setting=fp16
steps="2 5"
while [[ $# -gt 0 ]]; do
    case $1 in
    --depths) depths=${2:?}; shift 2 ;;
    --setting) setting=${2:?}; shift 2 ;;
    --steps) steps=${2:?}; shift 2 ;;
    *) echo "usage: scripts/bench_depth.sh [--depths \"1 500\"]" \
            "[--setting MODE|auto] [--steps \"2 5\"]" >&2
       exit 2 ;;
    esac
done
read -r steps_a steps_b <<<"$steps"

"$root/scripts/build.sh" "$build" gcc >/dev/null
command -v valgrind >/dev/null ||
    { echo "bench_depth: valgrind is missing (scripts/setup.sh)" >&2
      exit 1; }
shim=$build/hooks/libampshim.so
prog=$build/examples/framework

# run DEPTH STEPS: "calls shim_ir converted fallback" of one run.
run() {
    "$root/scripts/depth_cost.sh" "$shim" "$prog" "$build/tests/emu" "$1" \
        "$2" "$setting"
}

echo "Host cost per hooked call of examples/framework --small," \
     "$setting, on the CPU device emulator:"
echo "instructions in the shim's own code (src/, hooks/) per warm-up call," \
     "from $steps_a and $steps_b steps."
echo
printf "%-6s %7s %7s %14s %14s %9s %10s %9s\n" depth "calls" "calls" \
       "shim Ir" "shim Ir" "Ir/call" converted fallback
for depth in $depths; do
    echo "bench_depth: depth $depth: $steps_a and $steps_b steps" >&2
    read -r ca ia _ _ < <(run "$depth" "$steps_a")
    read -r cb ib conv fb < <(run "$depth" "$steps_b")
    printf "%-6s %7d %7d %14d %14d %9.0f %10d %9d\n" "$depth" "$ca" "$cb" \
           "$ia" "$ib" \
           "$(awk -v a="$ia" -v b="$ib" -v x="$ca" -v y="$cb" \
                  'BEGIN { print (b - a) / (y - x) }')" "$conv" "$fb"
done
