#!/usr/bin/env bash
# One measurement of the shim's host cost as the device falls behind, for
# scripts/bench_depth.sh and the `cost` suite's test_depth_cost: runs
# examples/framework --small --replays 0 --steps STEPS (one GEMM wrapper,
# cuBLASLt Linear layers, graph-API convolution plans, a backward thread,
# captured steps) under cachegrind (--cache-sim=no: instructions only) on
# the CPU device emulator, the device DEPTH operations behind the host
# (AMPSHIM_EMU_BEHIND), preloaded with SHIM under SETTING, and prints one
# line: "CALLS SHIM_IR CONVERTED FALLBACK", the hooked calls the program
# issued (its own count), the instructions of the lines of the shim's
# sources (src/ and hooks/: its host code, not the emulated kernels, whose
# host form kernels/ the emulator runs), and the calls converted (shadow
# calls not among them) and fallen back (the exit summary's).
#
# The emulator opens device pages from a SIGSEGV handler while a kernel
# runs and retries the access: valgrind runs one instruction per
# translation with precise registers for that retry to be exact
# (--vex-guest-max-insns=1 --vex-iropt-register-updates=allregs-at-each-insn;
# without them the shim's kernels fault).
#
# usage: scripts/depth_cost.sh SHIM PROGRAM EMU_LIBDIR DEPTH STEPS SETTING
#   SETTING: an AMPSHIM_MODE (fp16: every call converted and timed, every
#   convolution's non-finite check in a result slot), or auto (an auto
#   policy for GEMMs and convolutions).
set -euo pipefail
if [[ $# -ne 6 ]]; then
    echo "usage: scripts/depth_cost.sh SHIM PROGRAM EMU_LIBDIR DEPTH STEPS" \
         "SETTING" >&2
    exit 2
fi
shim=$1 prog=$2 emu=$3 depth=$4 steps=$5 setting=$6
command -v valgrind >/dev/null ||
    { echo "depth_cost: valgrind is missing (scripts/setup.sh)" >&2; exit 1; }
for f in "$shim" "$prog"; do
    [[ -e $f ]] || { echo "depth_cost: $f was not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
# No report (its writing at exit varies with what was seen): the exit
# summary's counts instead.
export LD_LIBRARY_PATH=$emu AMPSHIM_REPORT=off AMPSHIM_SUMMARY=1
export AMPSHIM_LOG_LEVEL=warn
case $setting in
auto)
    cat >"$tmp/auto.policy" <<'POLICY'
set tolerance 5e-3
rule auto when gemm
rule auto when conv
default fp32
POLICY
    set_env=(AMPSHIM_POLICY="$tmp/auto.policy") ;;
*) set_env=(AMPSHIM_MODE="$setting") ;;
esac
env "${set_env[@]}" AMPSHIM_EMU_BEHIND="$depth" LD_PRELOAD="$shim" \
    valgrind --tool=cachegrind --cache-sim=no \
    --vex-guest-max-insns=1 \
    --vex-iropt-register-updates=allregs-at-each-insn \
    "--cachegrind-out-file=$tmp/cg.out" \
    "$prog" --small --steps "$steps" --replays 0 \
    >"$tmp/out" 2>"$tmp/err" || true
calls=$(sed -n 's/^calls: gemm=\([0-9]*\) lt=\([0-9]*\) conv=\([0-9]*\)$/\1 \2 \3/p' \
            "$tmp/out" | awk '{ print $1 + $2 + $3 }')
[[ -n $calls && -s $tmp/cg.out ]] ||
    { echo "depth_cost: depth $depth, $steps steps: the program failed:" >&2
      tail -n 20 "$tmp/out" "$tmp/err" >&2; exit 1; }
python3 - "$tmp/cg.out" "$tmp/err" "$calls" <<'PY'
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
PY
