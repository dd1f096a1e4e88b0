#!/usr/bin/env bash
# The shim's host cost per hooked call as the device falls behind the
# host: examples/framework --small under AMPSHIM_MODE=fp16 (every call
# converted and timed, every convolution's non-finite check in a result
# slot) with the device 1 and 500 operations behind, each at 2 and 4
# steps under cachegrind (scripts/depth_cost.sh). The instructions of the
# shim's own code per warm-up call (the difference between the two runs
# over the difference in hooked calls) at depth 500 within 10 % of depth
# 1's; at both depths the same calls, the same number converted, none
# fallen back. Instructions, not time: the same on any machine.
#
# usage: test_depth_cost.sh DEPTH_COST SHIM FRAMEWORK EMU_LIBDIR
set -euo pipefail
[[ $# -eq 4 ]] ||
    { echo "usage: test_depth_cost.sh DEPTH_COST SHIM FRAMEWORK EMU_LIBDIR" >&2
      exit 2; }
cost=$1 shim=$2 prog=$3 emu=$4

declare -A per_call converted fallback calls
for depth in 1 500; do
    a=$("$cost" "$shim" "$prog" "$emu" "$depth" 2 fp16)
    b=$("$cost" "$shim" "$prog" "$emu" "$depth" 4 fp16)
    read -r ca ia _ _ <<<"$a"
    read -r cb ib conv fb <<<"$b"
    per_call[$depth]=$(awk -v a="$ia" -v b="$ib" -v x="$ca" -v y="$cb" \
                           'BEGIN { printf "%.1f", (b - a) / (y - x) }')
    converted[$depth]=$conv
    fallback[$depth]=$fb
    calls[$depth]="$ca $cb"
    echo "depth $depth: calls $ca, $cb; shim Ir $ia, $ib;" \
         "Ir per warm-up call ${per_call[$depth]}; converted $conv," \
         "fallback $fb"
done

fail=0
if [[ ${calls[1]} != "${calls[500]}" ]]; then
    echo "FAIL: the program issued ${calls[1]} hooked calls at depth 1" \
         "and ${calls[500]} at depth 500" >&2
    fail=1
fi
if ! awk -v a="${per_call[1]}" -v b="${per_call[500]}" \
        'BEGIN { exit !(a > 0 && b <= a * 1.10 && b >= a * 0.90) }'; then
    echo "FAIL: ${per_call[500]} shim instructions per call at depth 500," \
         "${per_call[1]} at depth 1: more than 10 % apart" >&2
    fail=1
fi
if [[ ${converted[1]} != "${converted[500]}" ]]; then
    echo "FAIL: ${converted[1]} calls converted at depth 1," \
         "${converted[500]} at depth 500" >&2
    fail=1
fi
if [[ ${fallback[1]} != 0 || ${fallback[500]} != 0 ]]; then
    echo "FAIL: calls fell back to FP32: ${fallback[1]} at depth 1," \
         "${fallback[500]} at depth 500" >&2
    fail=1
fi
exit $fail
