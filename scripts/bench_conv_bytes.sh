#!/usr/bin/env bash
# The device bytes of a steady converted forward convolution's own kernels
# over the bytes of its FP32 tensors (x, w and y, 4 bytes an element), from
# the emulator's per-kernel counts (AMPSHIM_EMU_KERNEL_STATS): examples/
# conv_bench under the shim forced to fp16 with W and with W + 1 warm-up
# calls, the difference being one steady call. The least is 1.5 (each FP32
# input read once and its half copy written, the half output read once and
# written as FP32). Bytes are deterministic; with --max R the script exits
# 1 when the ratio is above R.
#
# usage: scripts/bench_conv_bytes.sh [--shape N,C,K,H,W,R] [--layout nhwc|nchw]
#                                    [--warmup W] [--max R]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
shape=32,64,64,28,28,3
layout=nhwc
warmup=3
max=
while [[ $# -gt 0 ]]; do
    case $1 in
    --shape) shape=${2:?--shape needs N,C,K,H,W,R}; shift 2 ;;
    --layout) layout=${2:?--layout needs nhwc or nchw}; shift 2 ;;
    --warmup) warmup=${2:?--warmup needs a count}; shift 2 ;;
    --max) max=${2:?--max needs a ratio}; shift 2 ;;
    *) sed -n 's/^# \{0,1\}//p' "$0" | sed -n '/^usage/,$p' >&2; exit 2 ;;
    esac
done

shim=$build/hooks/libampshim.so
prog=$build/examples/conv_bench
emu=$build/tests/emu
for f in "$shim" "$prog"; do
    [[ -e $f ]] || { echo "bench_conv_bytes: $f was not built" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run W: the shim's kernel lines of a run with W warm-up calls and one more.
run() {
    env -u AMPSHIM_DISABLE -u AMPSHIM_POLICY AMPSHIM_MODE=fp16 \
        AMPSHIM_EMU_KERNEL_STATS=1 \
        LD_LIBRARY_PATH="$emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        LD_PRELOAD="$shim" "$prog" --shape "$shape" --dirs fwd \
        --layouts "$layout" --warmup "$1" --reps 1 >"$tmp/out" 2>"$tmp/err"
    sed -n 's/^ampshim-emu: kernel \(amp_k_[a-z0-9_]*\) .* bytes=\([0-9]*\) .*/\1 \2/p' \
        "$tmp/err"
}

run "$warmup" >"$tmp/one"
run $((warmup + 1)) >"$tmp/two"
IFS=, read -r n c k h w r <<<"$shape"
# Padding R/2, stride 1: the output is N x K x H x W.
awk -v n="$n" -v c="$c" -v k="$k" -v h="$h" -v w="$w" -v r="$r" \
    -v max="$max" -v shape="$shape" -v layout="$layout" '
    FNR == NR { one[$1] = $2; next }
    { steady[$1] = $2 - one[$1]; total += steady[$1] }
    END {
        fp32 = 4 * (n * c * h * w + k * c * r * r + n * k * h * w)
        printf "forward %s %s, one steady fp16 call:\n", shape, layout
        for (name in steady)
            if (steady[name] > 0)
                printf "  %-26s %12d bytes  %.3fx\n", name, steady[name],
                       steady[name] / fp32
        printf "  %-26s %12d bytes\n", "FP32 tensors", fp32
        printf "bytes ratio %.3f (least 1.5)\n", total / fp32
        if (max != "" && total / fp32 > max + 0)
            exit 1
    }' "$tmp/one" "$tmp/two"
