#!/usr/bin/env bash
# GEMM benchmark: builds, then runs examples/gemm_bench (plain FP32
# cublasSgemm_v2 timed with CUDA events) without the shim and under
# LD_PRELOAD=libampshim.so in every mode, and prints one table: GPU, shape,
# mode, time per call, speed-up over FP32 without the shim, max relative
# error of a sample of C against a double reference, and on the emulator
# two ratios of the converting modes: the device bytes the shim's own
# kernels moved in one steady-state call (the emulator's per-kernel
# counts, AMPSHIM_EMU_KERNEL_STATS) over the least cast traffic (each FP32
# element of A and B read once, its half copy written once: 6 bytes, 8 for
# fp16x3's two halves, 12 for tf32x3's two FP32 parts), and for fp16 and
# bf16 the roofline ideal (the half GEMM's FLOPs at the model's FP16 rate
# plus that least traffic at its bandwidth, both at the model's
# efficiencies) over the modelled time.
# Every GEMM of a shape comes from one call site of gemm_bench, so the
# timed calls follow a warm-up at their own site. Then the shim's host
# cost per call of an 8x8x8 SGEMM, and the policy's cost per decision
# (tests/bench_policy: first and cached). It prints numbers and asserts
# nothing.
#
# usage: scripts/bench_gemm.sh [--full] [--shapes MxNxK,...] [--beta B]
#
# --beta B times C = A B + B C instead (default 0): with beta != 0 the
# fp16, bf16 and tf32 modes write their result into scratch and one more
# kernel writes C (the fail-safe's cost).
#
# On a GPU (nvidia-smi lists one) times are measured, on that GPU. Without
# one the program runs on the CPU device emulator (build/tests/emu) once per
# modelled GPU (h100 h200 b200 a100 l4 rtx4090; BENCH_GPUS overrides), and
# the times are the emulator's modelled times. The emulator computes every
# product on the CPU (about 0.03 s per 1024^3 call on one core:
# scripts/bench_emu.sh), so its default shapes stop at 1024^3 and
# 2048x2048x256-sized skinny shapes, with 8 warm-up and 16 timed calls
# (modelled times are deterministic; the warm-up covers the first 8
# converted calls of a shape, which the shim times, and of the 16 steady
# ones it times 1, as in a long run): several minutes in all.
# --full runs 256^3 to 8192^3 and the 8192/256 skinny shapes (the default
# on a GPU; hours on the emulator).
# JOBS=N limits the build's parallel jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build

small=256x256x256,1024x1024x1024,2048x2048x256,2048x256x2048,256x2048x2048
full=256x256x256,1024x1024x1024,4096x4096x4096,8192x8192x8192
full+=,8192x8192x256,8192x256x8192,256x8192x8192
shapes=
beta=0
while [[ $# -gt 0 ]]; do
    case $1 in
    --full) shapes=$full; shift ;;
    --shapes) shapes=${2:?--shapes needs MxNxK,...}; shift 2 ;;
    --beta) beta=${2:?--beta needs a number}; shift 2 ;;
    *) echo "usage: scripts/bench_gemm.sh [--full] [--shapes MxNxK,...]" \
            "[--beta B]" >&2
       exit 2 ;;
    esac
done

"$root/scripts/build.sh" "$build" gcc >/dev/null

shim=$build/hooks/libampshim.so
prog=$build/examples/gemm_bench
emu=$build/tests/emu
for f in "$shim" "$prog" "$build/tests/bench_policy"; do
    [[ -e $f ]] || { echo "bench_gemm: $f was not built" >&2; exit 1; }
done

# The shim's settings come from here, not from the caller's shell.
unset AMPSHIM_DISABLE AMPSHIM_LOG_FILE AMPSHIM_MODE AMPSHIM_EMU_FAIL \
      AMPSHIM_SCRATCH_MAX
export AMPSHIM_SUMMARY=1 AMPSHIM_LOG_LEVEL=warn

if gpus=$(nvidia-smi -L 2>/dev/null) && [[ -n $gpus ]]; then
    kind=measured
    gpu_list=(gpu)
    env_run=(env)
    bench_args=(--warmup 3 --reps 10)
    shapes=${shapes:-$full}
else
    kind=modelled
    read -r -a gpu_list <<<"${BENCH_GPUS:-h100 h200 b200 a100 l4 rtx4090}"
    env_run=(env "LD_LIBRARY_PATH=$emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    # Past the shim's first 8 converted calls of a shape, which it times
    # (each timing event costs device time): 16 steady calls, of which it
    # times 1, as in a long run.
    bench_args=(--warmup 8 --reps 16)
    shapes=${shapes:-$small}
fi
# The counts of the shim's summary line, as \1 (calls) and \2 (converted).
count='calls=\([0-9]*\) converted=\([0-9]*\).*'
modes=(none fp32 fp16 bf16 tf32 fp16x3 tf32x3 bf16x9 shadow)

# The emulator's per-kernel byte counts, for the table (not the host cost).
kernel_stats=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run GPU MODE ARGS...: the program's stdout in $tmp/out, stderr in
# $tmp/err; MODE "none" runs without the shim, "disable" passes through.
run() {
    local gpu=$1 mode=$2
    local -a env_mode=()
    shift 2
    [[ $gpu == gpu ]] || env_mode+=("AMPSHIM_EMU_GPU=$gpu"
                                    "AMPSHIM_EMU_KERNEL_STATS=$kernel_stats")
    case $mode in
    none) ;;
    disable) env_mode+=("LD_PRELOAD=$shim" AMPSHIM_DISABLE=1) ;;
    *) env_mode+=("LD_PRELOAD=$shim" "AMPSHIM_MODE=$mode") ;;
    esac
    if ! "${env_run[@]}" "${env_mode[@]}" "$prog" "$@" \
            >"$tmp/out" 2>"$tmp/err"; then
        echo "bench_gemm: $gpu $mode: gemm_bench failed:" >&2
        cat "$tmp/out" "$tmp/err" >&2
        exit 1
    fi
}

# field NAME FILE...: the values of NAME= on the lines of the files.
field() {
    local name=$1
    shift
    sed -n "s/.*[[:space:]]$name=\([^[:space:]]*\).*/\1/p" "$@"
}

# kernel_bytes FILE: the bytes the emulator charged every kernel of the
# run (its AMPSHIM_EMU_KERNEL_STATS lines), summed.
kernel_bytes() {
    sed -n 's/^ampshim-emu: kernel .* bytes=\([0-9]*\) .*/\1/p' "$1" |
        awk '{ t += $1 } END { printf "%.0f", t }'
}

# model_field NAME FILE: a rate of the emulator's model line.
model_field() {
    sed -n "s/^ampshim-emu: model .*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" "$2"
}

# least_bytes MODE M N K: the least cast traffic of a call, or nothing for
# a mode that casts nothing.
least_bytes() {
    local per
    case $1 in
    fp16|bf16) per=6 ;;
    fp16x3) per=8 ;;
    tf32x3) per=12 ;;
    *) return 0 ;;
    esac
    awk -v p="$per" -v m="$2" -v n="$3" -v k="$4" \
        'BEGIN { printf "%.0f", p * (m * k + k * n) }'
}

# steady_bytes MODE M N K: the bytes of the shim's kernels in one
# steady-state call of the shape: a run with two warm-up calls less a run
# with one (each then makes one timed call).
steady_bytes() {
    local mode=$1 shape=$2x$3x$4 one two
    run "${gpu_list[0]}" "$mode" --shapes "$shape" --beta "$beta" \
        --warmup 1 --reps 1
    one=$(kernel_bytes "$tmp/err")
    run "${gpu_list[0]}" "$mode" --shapes "$shape" --beta "$beta" \
        --warmup 2 --reps 1
    two=$(kernel_bytes "$tmp/err")
    echo $((two - one))
}

if [[ $kind == modelled ]]; then
    IFS=, read -r -a shape_list <<<"$shapes"
    for mode in fp16 bf16 fp16x3 tf32x3; do
        for shape in "${shape_list[@]}"; do
            IFS=x read -r m n k <<<"$shape"
            steady_bytes "$mode" "$m" "$n" "$k" >"$tmp/bytes.$mode.$shape"
        done
    done
fi

echo "GEMM benchmark: cublasSgemm_v2, C = A B + $beta C (N, N), A and B" \
     "uniform in [0, 1); time per call $kind"
echo "with CUDA events; error: max |C - C_ref| / |C_ref| over a 16 x 16" \
     "sample of C, C_ref in double."
if [[ $kind == modelled ]]; then
    echo "bytes/least: the shim's kernels' device bytes in one steady-state" \
         "call over the least cast"
    echo "traffic (6 bytes per element of A and B, 8 for fp16x3, 12 for" \
         "tf32x3); roofline: (2mnk at the model's"
    echo "FP16 rate + that traffic at its bandwidth) over the modelled time."
fi
printf '%-8s %-16s %-7s %14s %8s %12s %11s %8s  %s\n' GPU shape mode \
    "ms ($kind)" speedup max_rel_err bytes/least roofline converted
for gpu in "${gpu_list[@]}"; do
    for mode in "${modes[@]}"; do
        run "$gpu" "$mode" --shapes "$shapes" --beta "$beta" \
            "${bench_args[@]}"
        name=$(sed -n 's/^device name="\(.*\)" .*/\1/p' "$tmp/out")
        # converted/calls from the shim's exit summary: proof it ran.
        summary=$(sed -n "s/^ampshim\[[0-9]*\]: summary cublasSgemm_v2 $count/\2\/\1/p" \
                      "$tmp/err")
        paste -d' ' <(field m "$tmp/out") <(field n "$tmp/out") \
                    <(field k "$tmp/out") <(field ms "$tmp/out") \
                    <(field max_rel_err "$tmp/out") >"$tmp/$gpu.$mode"
        while read -r m n k ms err; do
            base=$(awk -v m="$m" -v n="$n" -v k="$k" \
                       '$1 == m && $2 == n && $3 == k { print $4 }' \
                       "$tmp/$gpu.none")
            speedup=$(awk -v a="$base" -v b="$ms" \
                          'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
            least=$(least_bytes "$mode" "$m" "$n" "$k")
            ratio=- roof=-
            if [[ -n $least && -f $tmp/bytes.$mode.${m}x${n}x${k} ]]; then
                ratio=$(awk -v b="$(cat "$tmp/bytes.$mode.${m}x${n}x${k}")" \
                            -v l="$least" 'BEGIN { printf "%.3f", b / l }')
            fi
            if [[ $kind == modelled && ($mode == fp16 || $mode == bf16) ]]
            then
                roof=$(awk -v m="$m" -v n="$n" -v k="$k" -v l="$least" \
                    -v ms="$ms" -v f="$(model_field fp16_tflops "$tmp/err")" \
                    -v fe="$(model_field fp16_efficiency "$tmp/err")" \
                    -v bw="$(model_field bandwidth_tbs "$tmp/err")" \
                    -v be="$(model_field mem_efficiency "$tmp/err")" \
                    'BEGIN { g = 2 * m * n * k / (f * 1e12 * fe)
                             c = l / (bw * 1e12 * be)
                             printf "%.1f%%", 100 * (g + c) / (ms * 1e-3) }')
            fi
            printf '%-8s %-16s %-7s %14.4f %8s %12s %11s %8s  %s\n' "$gpu" \
                "${m}x${n}x${k}" "$mode" "$ms" "$speedup" "$err" \
                "$ratio" "$roof" "${summary:--}"
        done <"$tmp/$gpu.$mode"
    done
    echo "  ($gpu: $name)"
done

# The shim's host cost: wall-clock per call of a tiny GEMM, the same loop
# with and without the shim.
calls=20000
kernel_stats=0
echo
echo "Host cost per call: 8x8x8 cublasSgemm_v2 issued $calls times in a" \
     "tight loop, then"
echo "synchronised; best of 3 runs, minus the time without the shim."
if [[ $kind == modelled ]]; then
    echo "On the emulator every figure includes the emulator's own host" \
         "work (queueing"
    echo "and running each op on the CPU): emulator + shim host cost, not" \
         "a GPU's."
fi
printf '%-9s %14s %14s\n' setting "us/call" "shim us/call"
gpu=${gpu_list[0]}
base=
for mode in none disable fp32 fp16; do
    best=
    for _ in 1 2 3; do
        run "$gpu" "$mode" --overhead "$calls"
        us=$(field us_per_call "$tmp/out")
        best=$(awk -v a="${best:-$us}" -v b="$us" \
                   'BEGIN { print (b < a ? b : a) }')
    done
    base=${base:-$best}
    case $mode in
    none) label="no shim" ;;
    disable) label="DISABLE=1" ;;
    *) label="MODE=$mode" ;;
    esac
    printf '%-9s %14.3f %14.3f\n' "$label" "$best" \
        "$(awk -v a="$best" -v b="$base" 'BEGIN { print a - b }')"
done

# The policy's own cost per call (host only, no device): a match against
# the rules, a first decision through the decision cache, a cached one.
echo
"$build/tests/bench_policy" "$root/policy/default.policy" \
    "$root/policy/examples/trainer.policy" \
    "$root/policy/examples/inference.policy"
