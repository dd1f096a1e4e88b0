#!/usr/bin/env bash
# The shim's host cost per hooked call as the device falls behind the
# host: runs examples/framework (one GEMM wrapper, cuBLASLt Linear
# layers, graph-API convolution plans, a backward thread, captured steps)
# under callgrind on the CPU device emulator with the device running
# behind the host (AMPSHIM_EMU_BEHIND) at each queue depth asked, and
# prints the instructions executed in libampshim.so's own code per hooked
# call (cublasSgemm_v2, cublasLtMatmul, cudnnBackendExecute) and how
# much work was pending. It asserts nothing.
#
# usage: scripts/bench_depth.sh [--depths "1 500"] [--setting SETTING]
#                               [-- FRAMEWORK_ARGS...]
#   SETTING: an AMPSHIM_MODE, fp16 by default (every call converted and
#   timed, every convolution's non-finite check in a result slot), or
#   auto (an auto policy for GEMMs and convolutions). FRAMEWORK_ARGS
#   default to --small --steps 4 --replays 0.
#
# Method (docs/benchmarks.md): callgrind collects only inside the hooked
# entry points (--toggle-collect on their names: the shim's hook turns
# collection on, the real function it calls, of the same name, turns it
# off while it runs), and scripts/callgrind_costs.py sums the profile's
# instructions in libampshim.so's own code (exclusive: the emulated
# driver and vendor calls it makes are not counted). The emulator opens
# device pages from a SIGSEGV handler while a kernel runs and retries the
# access: valgrind runs one instruction per translation, with precise
# registers, for that retry to be exact (--vex-guest-max-insns=1
# --vex-iropt-register-updates=allregs-at-each-insn; slow, and without
# them the shim's kernels fault). Calls: the
# program's own count of what it issued. JOBS=N limits the build's jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
depths="1 500"
setting=fp16
args=(--small --steps 4 --replays 0)
while [[ $# -gt 0 ]]; do
    case $1 in
    --depths) depths=${2:?}; shift 2 ;;
    --setting) setting=${2:?}; shift 2 ;;
    --) shift; args=("$@"); break ;;
    *) echo "usage: scripts/bench_depth.sh [--depths \"1 500\"]" \
            "[--setting MODE|auto] [-- FRAMEWORK_ARGS...]" >&2
       exit 2 ;;
    esac
done

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
export LD_LIBRARY_PATH=$build/tests/emu AMPSHIM_SUMMARY=0
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

echo "Host cost per hooked call of examples/framework ${args[*]}," \
     "$setting, on the CPU device emulator"
echo "(callgrind: instructions in libampshim.so's own code inside the" \
     "hooked entry points)."
echo
printf "%-6s %8s %14s %9s %10s %9s\n" depth calls "shim Ir" "Ir/call" \
       converted fallback
for depth in $depths; do
    echo "bench_depth: depth $depth: callgrind" >&2
    rm -f "$tmp"/cg.* "$tmp/report.json"
    env "${set_env[@]}" AMPSHIM_EMU_BEHIND="$depth" \
        AMPSHIM_REPORT="$tmp/report.json" LD_PRELOAD="$shim" \
        valgrind --tool=callgrind "--callgrind-out-file=$tmp/cg.%p" \
        --vex-guest-max-insns=1 \
        --vex-iropt-register-updates=allregs-at-each-insn \
        --collect-atstart=no --toggle-collect=cublasSgemm_v2 \
        --toggle-collect=cublasLtMatmul \
        --toggle-collect=cudnnBackendExecute \
        "$prog" "${args[@]}" >"$tmp/out" 2>"$tmp/err" || true
    calls=$(sed -n 's/^calls: gemm=\([0-9]*\) lt=\([0-9]*\) conv=\([0-9]*\)$/\1 \2 \3/p' \
                "$tmp/out" | awk '{ print $1 + $2 + $3 }')
    [[ -n $calls && -s $tmp/report.json ]] ||
        { echo "bench_depth: depth $depth: the program failed:" >&2
          tail -n 20 "$tmp/out" "$tmp/err" >&2; exit 1; }
    ir=$(python3 "$root/scripts/callgrind_costs.py" libampshim.so \
             "$tmp"/cg.* |
         sed 's/.*ir_object=\([0-9]*\).*/\1/' | awk '{ s += $1 } END { print s }')
    read -r converted fallback < <(python3 - "$tmp/report.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["converted"] - t["shadow"], t["fallback"])
EOF
)
    printf "%-6s %8d %14d %9.0f %10d %9d\n" "$depth" "$calls" "$ir" \
           "$(awk -v a="$ir" -v b="$calls" 'BEGIN { print a / b }')" \
           "$converted" "$fallback"
done
