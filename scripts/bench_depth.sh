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
# two --steps counts (--small --replays 0), under cachegrind
# (--cache-sim=no: instructions only); the instructions of the lines of
# the shim's sources (src/ and hooks/: its host code, not the emulated
# kernels, whose host form kernels/ the emulator runs) are summed, and the
# difference between the two runs over the difference in hooked calls
# (the program's own count of what it issued) is the cost of one more
# warm-up call: start-up, set-up and exit cancel out. The emulator opens
# device pages from a SIGSEGV handler while a kernel runs and retries the
# access: valgrind runs one instruction per translation with precise
# registers for that retry to be exact (--vex-guest-max-insns=1
# --vex-iropt-register-updates=allregs-at-each-insn; slow; without them
# the shim's kernels fault, and callgrind, which would collect inside the
# hooks alone, stops on an assertion with them). JOBS=N limits the
# build's jobs.
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
for f in "$shim" "$prog"; do
    [[ -e $f ]] || { echo "bench_depth: $f was not built" >&2; exit 1; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
# No report (its writing at exit varies with what was seen): the exit
# summary's counts instead.
export LD_LIBRARY_PATH=$build/tests/emu AMPSHIM_REPORT=off AMPSHIM_SUMMARY=1
export AMPSHIM_LOG_LEVEL=warn
case $setting in
auto)
    cat >"$tmp/auto.policy" <<'EOF'
set tolerance 5e-3
rule auto when gemm
rule auto when conv
default fp32
EOF
    set_env=(AMPSHIM_POLICY="$tmp/auto.policy") ;;
*) set_env=(AMPSHIM_MODE="$setting") ;;
esac

# run DEPTH STEPS: "calls shim_ir converted fallback" of one run.
run() {
    local depth=$1 n=$2 calls ir
    rm -f "$tmp/cg.out"
    env "${set_env[@]}" AMPSHIM_EMU_BEHIND="$depth" LD_PRELOAD="$shim" \
        valgrind --tool=cachegrind --cache-sim=no \
        --vex-guest-max-insns=1 \
        --vex-iropt-register-updates=allregs-at-each-insn \
        "--cachegrind-out-file=$tmp/cg.out" \
        "$prog" --small --steps "$n" --replays 0 \
        >"$tmp/out" 2>"$tmp/err" || true
    calls=$(sed -n 's/^calls: gemm=\([0-9]*\) lt=\([0-9]*\) conv=\([0-9]*\)$/\1 \2 \3/p' \
                "$tmp/out" | awk '{ print $1 + $2 + $3 }')
    [[ -n $calls && -s $tmp/cg.out ]] ||
        { echo "bench_depth: depth $depth, $n steps: the program failed:" >&2
          tail -n 20 "$tmp/out" "$tmp/err" >&2; exit 1; }
    python3 - "$tmp/cg.out" "$tmp/err" "$calls" <<'EOF'
import re, sys
ir, where = 0, ""
for line in open(sys.argv[1]):
    if line.startswith("fl="):
        where = line[3:].strip()
    elif line[:1].isdigit() and ("/src/" in where or "/hooks/" in where):
        ir += int(line.split()[1])
converted = fallback = 0
for line in open(sys.argv[2], errors="replace"):
    m = re.search(r"summary \S+ calls=\d+ converted=(\d+) .*fallback=(\d+) "
                  r".*shadow=(\d+)", line)
    if m:
        converted += int(m.group(1)) - int(m.group(3))
        fallback += int(m.group(2))
print(sys.argv[3], ir, converted, fallback)
EOF
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
