#!/usr/bin/env bash
# The project's check on a real GPU, in one command: builds, runs the
# example programs under the shim against the real NVIDIA libraries in
# every mode (each case within its bound, the calls converted: the
# summary's converted count), the GEMM benchmark in every mode with
# measured times, the convolution and GEMM throughput without the shim,
# the same GEMMs on the emulator's model of that GPU (how far the model is
# off), and the legacy trainer on the whole data set plain and under the
# shim; then writes what it measured to docs/gpu-results.md (a new dated
# section above the earlier ones). About 10 minutes on an H100.
#
# Without a GPU (nvidia-smi lists none) it says so and exits 0. With
# --dry-run it runs the same steps on the CPU device emulator with small
# sizes (the suite runs it so) and writes the results to
# build/gpu-check/gpu-results.md instead (--out FILE elsewhere).
#
# usage: scripts/gpu-check.sh [--dry-run] [--out FILE] [--build DIR]
# --build DIR uses the tree built in DIR as it is (the test suite's);
# without it the script builds build/. JOBS=N limits the build's jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dry=0
out=
built=
while [[ $# -gt 0 ]]; do
    case $1 in
    --dry-run) dry=1; shift ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --build) built=${2:?--build needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: scripts/gpu-check.sh [--dry-run] [--out FILE]" \
            "[--build DIR]" >&2
       exit 2 ;;
    esac
done

gpus=$(nvidia-smi -L 2>/dev/null || true)
if [[ -z $gpus && $dry == 0 ]]; then
    echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L lists none):" \
         "nothing to check; --dry-run runs the steps on the emulator"
    exit 0
fi

if [[ -n $built ]]; then
    build=$(cd "$built" && pwd)
else
    build=$root/build
    "$root/scripts/build.sh" "$build" gcc >/dev/null
fi
shim=$build/hooks/libampshim.so
emu=$build/tests/emu
work=$build/gpu-check
rm -rf "$work"
mkdir -p "$work"
if [[ $dry == 1 ]]; then
    out=${out:-$work/gpu-results.md}
    gpu_name="emulated $(echo "${AMPSHIM_EMU_GPU:-h100}" | tr a-z A-Z) (dry run)"
    driver="none (CPU device emulator)"
    # The emulator stands in for the libraries.
    lib_env=("LD_LIBRARY_PATH=$emu")
    timing=modelled
else
    out=${out:-$root/docs/gpu-results.md}
    gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader |
             head -1)
    lib_env=()
    timing=measured
fi

# The shim's settings come from here, not from the caller's shell.
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export AMPSHIM_REPORT=off AMPSHIM_LOG_LEVEL=warn
failures=0
results=$work/results.md
: >"$results"
note() { echo "$*" | tee -a "$results"; }
failed() { echo "gpu-check: FAILED: $*" >&2; failures=$((failures + 1)); }

# ---- 1. The example programs under the shim, every mode ------------------------
# Each program checks its own cases against the mode's bound (--tol) and
# ends with a "result:" line; the shim's summary lines say how many calls converted.
# No baseline shadow call: every eligible call converts.
note "## Example programs under the shim"
note ""
note "| program | mode (bound) | result | calls converted |"
note "|---|---|---|---|"
programs=(sgemm_check gemm_suite legacy_sgemm conv_check lt_check conv_graph)
for prog in "${programs[@]}"; do
    for mode in fp16 bf16 tf32 fp16x3 shadow; do
        log=$work/$prog.$mode
        status=0
        # The bound each case must meet: the mode's (fp16x3 and shadow:
        # FP32's).
        tol=$mode
        [[ $mode == fp16x3 || $mode == shadow ]] && tol=fp32
        # cuDNN runs FP32 convolutions in TF32 by default (Ampere on).
        [[ $prog == conv* && $tol == fp32 ]] && tol=tf32
        env "${lib_env[@]}" LD_PRELOAD="$shim" AMPSHIM_MODE=$mode \
            AMPSHIM_BASELINE=off "$build/examples/$prog" --tol $tol \
            >"$log.out" 2>"$log.err" || status=$?
        result=$(grep -h '^result:' "$log.out" "$log.err" | head -1 || true)
        converted=$(sed -n 's/.*summary [^ ]* calls=\([0-9]*\) converted=\([0-9]*\).*/\2/p' \
                        "$log.err" | awk '{ s += $1 } END { print s + 0 }')
        calls=$(sed -n 's/.*summary [^ ]* calls=\([0-9]*\) .*/\1/p' \
                    "$log.err" | awk '{ s += $1 } END { print s + 0 }')
        note "| $prog | $mode ($tol) | ${result#result: } | $converted of $calls |"
        [[ $status == 0 ]] ||
            failed "$prog under $mode exited with status $status ($log.err)"
        case $result in
        *" 0 failed, 0 errors"|*" cases pass"|*" cases passed") ;;
        *) failed "$prog under $mode: '${result:-no result line}'" ;;
        esac
        # fp16x3 converts no convolution; every other program and mode
        # converts calls.
        if [[ $converted == 0 && ! ( $mode == fp16x3 && $prog == conv* ) ]]; then
            failed "$prog under $mode: no call converted"
        fi
    done
done
note ""

# ---- 2. The GEMM benchmark, every mode --------------------------------------------
# On a GPU the shapes up to 8192^3; on the emulator (and for the model's
# side of the comparison) the small ones, which it computes in seconds.
if [[ $dry == 1 ]]; then
    shapes=256x256x256,1024x1024x1024
    model_shapes=$shapes
    bench_args=(--warmup 1 --reps 1)
else
    shapes=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192
    shapes+=,8192x8192x256,8192x256x8192,256x8192x8192
    model_shapes=1024x1024x1024,2048x2048x2048
    bench_args=(--warmup 3 --reps 10)
fi
# The emulator's model of this GPU, when it has one.
case $gpu_name in
*H100*) model=h100 ;;
*H200*) model=h200 ;;
*B200*) model=b200 ;;
*A100*) model=a100 ;;
*L4*) model=l4 ;;
*4090*) model=rtx4090 ;;
*) model= ;;
esac

# bench MODE ENV...: gemm_bench's "shape" lines (m n k ms) into
# $work/bench.MODE[.model]
bench() {
    local mode=$1 tag=$1 sh=$shapes
    shift
    local -a env_mode=("$@")
    if [[ ${env_mode[*]:-} == *AMPSHIM_EMU_GPU* ]]; then
        tag=$mode.model
        sh=$model_shapes
    fi
    [[ $mode == none ]] || env_mode+=("LD_PRELOAD=$shim" "AMPSHIM_MODE=$mode")
    if ! env "${env_mode[@]}" "$build/examples/gemm_bench" --shapes "$sh" \
            "${bench_args[@]}" >"$work/bench.$tag.out" 2>"$work/bench.$tag.err"
    then
        failed "gemm_bench under $mode ($work/bench.$tag.err)"
        : >"$work/bench.$tag"
        return
    fi
    sed -n 's/.* m=\([0-9]*\) n=\([0-9]*\) k=\([0-9]*\) .*ms=\([0-9.e+-]*\).*/\1 \2 \3 \4/p' \
        "$work/bench.$tag.out" >"$work/bench.$tag"
}
modes=(none fp16 bf16 tf32 fp16x3)
for mode in "${modes[@]}"; do
    bench "$mode" "${lib_env[@]}"
    if [[ $dry == 0 && -n $model ]]; then
        bench "$mode" "LD_LIBRARY_PATH=$emu" "AMPSHIM_EMU_GPU=$model"
    fi
done
note "## GEMM: cublasSgemm_v2, time per call ($timing), speedup over FP32 without the shim"
note ""
note "| shape | FP32 ms | $(printf '%s | ' "${modes[@]:1}")"
note "|---|---|$(printf -- '---|%.0s' "${modes[@]:1}")"
while read -r m n k base; do
    row="| ${m}x${n}x${k} | $base |"
    for mode in "${modes[@]:1}"; do
        ms=$(awk -v m="$m" -v n="$n" -v k="$k" \
                 '$1 == m && $2 == n && $3 == k { print $4 }' \
                 "$work/bench.$mode")
        row+=$(awk -v a="$base" -v b="${ms:-0}" \
                   'BEGIN { if (b > 0) printf " %.3f ms, %.2fx |", b, a / b;
                            else printf " - |" }')
    done
    note "$row"
done <"$work/bench.none"
note ""
if [[ $dry == 0 && -n $model ]]; then
    note "## Measured against the emulator's $model model (modelled ms / measured ms)"
    note ""
    note "| shape | $(printf '%s | ' "${modes[@]}")"
    note "|---|$(printf -- '---|%.0s' "${modes[@]}")"
    while read -r m n k _; do
        row="| ${m}x${n}x${k} |"
        for mode in "${modes[@]}"; do
            row+=$(awk -v m="$m" -v n="$n" -v k="$k" '
                FNR == 1 { file++ }
                $1 == m && $2 == n && $3 == k { t[file] = $4 }
                END { if (t[1] > 0 && t[2] > 0) printf " %.2f |", t[2] / t[1];
                      else printf " - |" }' \
                "$work/bench.$mode" "$work/bench.$mode.model")
        done
        note "$row"
    done <"$work/bench.none.model"
    note ""
elif [[ $dry == 0 ]]; then
    note "(The emulator has no model of this GPU: no comparison.)"
    note ""
fi

# ---- 3. Convolution and GEMM throughput without the shim ---------------------------
if [[ $dry == 1 ]]; then
    speed_args=(--reps 1 --gemm 256 --conv 8,32,32,16,16,3)
else
    speed_args=(--reps 20 --gemm 4096 --conv 64,256,256,56,56,3)
fi
if env "${lib_env[@]}" "$build/examples/speed_bench" "${speed_args[@]}" \
        >"$work/speed.out" 2>"$work/speed.err"; then
    note "## FP32 throughput without the shim (speed_bench, wall clock)"
    note ""
    note '```'
    cat "$work/speed.out" >>"$results"
    cat "$work/speed.out"
    note '```'
    note ""
else
    failed "speed_bench ($work/speed.err)"
fi

# ---- 4. The legacy trainer, plain and under the shim ---------------------------------
if [[ $dry == 1 ]]; then
    train_args=(--train 512 --test 256 --epochs 1 --seed 3)
else
    train_args=(--epochs 1 --seed 3)      # the whole data set
fi
trainer=$build/examples/legacy_trainer
declare -A acc
for run in plain shim; do
    cmd=("$trainer" "${train_args[@]}")
    [[ $run == shim ]] && cmd=("$build/src/ampshim" run --report \
                               "$work/trainer.json" -- "${cmd[@]}")
    start=$(date +%s.%N)
    if env "${lib_env[@]}" AMPSHIM_LIBRARY="$shim" "${cmd[@]}" >"$work/trainer.$run.out" 2>"$work/trainer.$run.err"
    then
        end=$(date +%s.%N)
        acc[$run]=$(sed -n 's/.*test_acc \([0-9.]*\).*/\1/p' \
                        "$work/trainer.$run.out" | tail -1)
        acc[$run.s]=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    else
        failed "the trainer, $run ($work/trainer.$run.err)"
        acc[$run]=-
        acc[$run.s]=-
    fi
done
note "## Legacy trainer (${train_args[*]})"
note ""
note "| run | test accuracy | wall seconds |"
note "|---|---|---|"
note "| FP32 | ${acc[plain]:--} | ${acc[plain.s]:--} |"
note "| under the shim (built-in policy) | ${acc[shim]:--} | ${acc[shim.s]:--} |"
note ""
if [[ ${acc[plain]:--} != - && ${acc[shim]:--} != - ]] &&
   ! awk -v a="${acc[plain]}" -v b="${acc[shim]}" \
         'BEGIN { d = a - b; exit !(d <= 1 && d >= -1) }'; then
    failed "trainer accuracy: ${acc[shim]} under the shim, ${acc[plain]} FP32"
fi

# ---- The results file ----------------------------------------------------------------
{
    echo "# Results on real GPUs"
    echo
    echo "Written by \`scripts/gpu-check.sh\`; the newest run first."
    echo
    echo "## $(date -u +%Y-%m-%d): $gpu_name, driver $driver"
    echo
    echo "ampshim $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')," \
         "$failures failed checks. Times $timing."
    echo
    sed 's/^## /### /' "$results"
    if [[ -f $out ]]; then
        # The earlier runs, below this one.
        sed '1,/^Written by/d' "$out" | sed '1{/^$/d}'
    fi
} >"$work/gpu-results.new"
mv "$work/gpu-results.new" "$out"
echo "gpu-check: wrote $out; $failures failed checks"
[[ $failures == 0 ]]
