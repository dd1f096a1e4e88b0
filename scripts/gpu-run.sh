#!/usr/bin/env bash
# The GPU check's steps, run from a bundle that scripts/gpu-check.sh
# --bundle wrote (this file is the bundle's run.sh): no source tree, no
# build, no network, any environment.
#
# usage: run.sh [--dry-run] [--logs DIR] [--budget SECONDS] OUTDIR
#
# Runs seven steps, each under its own time limit, all within --budget
# seconds (default 540, 9 minutes; with --dry-run four times that, on
# the CPU):
#   1. the example programs against the real libraries, without the
#      shim and in every mode, each case within its mode's bound, the
#      calls converted (a failure the program has without the shim too
#      is listed as the libraries')
#   2. the GEMM benchmark per mode and shape, measured against the
#      emulator's model of this GPU; the convolution benchmark per
#      direction, layout (NCHW, NHWC) and mode
#   3. the known risks of real hardware: a library built on cuBLAS
#      (cuSOLVER), a converted call captured in a CUDA graph, a deep
#      queue, auto's choices over three runs, fp16x3, tf32x3 and tf32
#      error
#   4. PyTorch: ResNet-50 and a GPT-2-small-sized transformer, training
#      steps plain, under the shim, under torch.compile (CUDA graphs),
#      with PyTorch's TF32 switch and under autocast
#   5. JAX: a jitted MLP and a convolutional net, plain and under the shim
#   6. CuPy: matmul and linalg.solve, plain and under the shim
#   7. the legacy trainer, plain and under the shim
# and appends each step's section to OUTDIR/gpu-results.md as soon as the
# step ends (a step stopped at its limit keeps the rows it wrote), its raw
# logs to the logs directory (default OUTDIR/logs) and the logs, packed,
# to OUTDIR/logs.tar.gz.
#
# The NVIDIA libraries are the machine's: the toolkit's (CUDA_HOME,
# CUDA_PATH, /usr/local/cuda) or the nvidia-* wheels beside the Python
# that imports torch. --dry-run runs the same steps on the CPU device
# emulator the bundle carries (a bundle made with --dry-run), at small
# sizes. Without a GPU and without --dry-run it says so and exits 0.
#
# Exit status: 0 when every check passed (a framework that is missing is
# a skipped step, not a failed one), 1 when a check failed, 2 on bad
# arguments.
set -uo pipefail

usage() {
    echo "usage: run.sh [--dry-run] [--logs DIR] [--budget SECONDS] OUTDIR" >&2
    exit 2
}

# ---- Shared by the steps --------------------------------------------------

# note LINE...: a line of this step's section.
note() { printf '%s\n' "$*" >>"$SECTION"; }
# failed WHAT: a failed check, counted and named at the end of its section.
failed() {
    echo "run.sh: FAILED: $*" >&2
    echo "$*" >>"$LOGS/failures"
    echo "$*" >>"$SECTION.failed"
}
# c_run SECONDS [NAME=VALUE...] PROGRAM [ARGS...]: a C program of the
# bundle under its own time limit (status 124 past it), with the NVIDIA
# libraries found (or the emulator), then the bundle's own.
c_run() {
    local limit=$(($1 * SCALE))
    shift
    timeout -k 5 "$limit" env LD_LIBRARY_PATH="$CLIB" "$@"
}
# forced MODE: in the array FORCED, the settings that preload the shim
# forcing MODE, with no report; none for "none" and "plain" (no shim).
forced() {
    FORCED=()
    [[ $1 == none || $1 == plain ]] ||
        FORCED=(LD_PRELOAD="$B/lib/libampshim.so" AMPSHIM_MODE="$1" AMPSHIM_REPORT=off)
}
# py_run SECONDS [NAME=VALUE...] PROGRAM [ARGS...]: a Python program
# likewise, with only the bundle's libraries: the frameworks find
# NVIDIA's themselves.
py_run() {
    local limit=$(($1 * SCALE))
    shift
    timeout -k 5 "$limit" env LD_LIBRARY_PATH="$B/lib" "$@"
}
# under_shim REPORT CMD...: CMD under `ampshim run`, the built-in policy.
under_shim() {
    local report=$1
    shift
    "$B/bin/ampshim" run --force --report "$report" -- "$@"
}
# field KEY FILE: the first KEY=VALUE of FILE's "result:" lines.
field() {
    grep -h '^result:' "$2" 2>/dev/null | tr ' ' '\n' |
        sed -n "s/^$1=//p" | head -1
}
# digest coverage|sites|choices REPORT: report_digest.py's lines, or "-".
digest() {
    if [[ -s $2 && -n $PY ]]; then
        "$PY" "$B/tools/report_digest.py" "$1" "$2" 2>/dev/null || echo -
    else
        echo "(no report)"
    fi
}
# kv KEY LINE: the value of KEY in a line of key=value pairs.
kv() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p" | head -1; }
# ratio A B: A / B to two decimals, "-" when either is missing or 0.
ratio() {
    awk -v a="${1:--}" -v b="${2:--}" 'BEGIN {
        if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'
}

# ---- 1. The example programs under the shim, every mode --------------------
step_examples() {
    note "## 1. Example programs under the shim"
    note ""
    note "Each program checks its own cases against the mode's bound (\`--tol\`);"
    note "no baseline shadow call (\`AMPSHIM_BASELINE=off\`), so every eligible"
    note "call converts. \`plain\`: the program without the shim, what the"
    note "libraries themselves do; a mode whose result is plain's failing one"
    note "is the libraries' failure, listed apart, not the shim's."
    note ""
    note "| program | mode (bound) | result | calls converted | seconds |"
    note "|---|---|---|---|---|"
    local prog mode tol log status result converted calls t0 t1
    local plain_status plain_result
    for prog in sgemm_check gemm_suite legacy_sgemm conv_check lt_check conv_graph \
                conv_fused; do
        # Without the shim, at FP32's bound (TF32's where the library
        # may use TF32 for FP32: cuDNN's convolutions, cuBLASLt).
        log=$LOGS/examples.$prog.plain
        tol=fp32
        [[ $prog == conv* || $prog == lt_check ]] && tol=tf32
        plain_status=0
        t0=$(date +%s.%N)
        c_run 60 "$B/bin/$prog" --tol $tol >"$log.out" 2>"$log.err" ||
            plain_status=$?
        t1=$(date +%s.%N)
        plain_result=$(grep -h '^result:' "$log.out" "$log.err" | head -1)
        note "| $prog | plain ($tol) | ${plain_result#result: } | - |" \
             "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') |"
        [[ $plain_status == 0 ]] ||
            echo "$prog without the shim: exit status $plain_status, '${plain_result:-no result line}'" \
                >>"$SECTION.library"
        for mode in fp16 bf16 tf32 fp16x3 tf32x3 shadow; do
            log=$LOGS/examples.$prog.$mode
            tol=$mode
            [[ $mode == fp16x3 || $mode == tf32x3 || $mode == shadow ]] && tol=fp32
            # cuDNN runs FP32 convolutions in TF32 by default (Ampere on).
            [[ $prog == conv* && $tol == fp32 ]] && tol=tf32
            status=0
            t0=$(date +%s.%N)
            c_run 60 LD_PRELOAD="$B/lib/libampshim.so" AMPSHIM_MODE=$mode \
                AMPSHIM_BASELINE=off AMPSHIM_REPORT=off \
                "$B/bin/$prog" --tol $tol \
                >"$log.out" 2>"$log.err" || status=$?
            t1=$(date +%s.%N)
            result=$(grep -h '^result:' "$log.out" "$log.err" | head -1)
            converted=$(sed -n 's/.*summary [^ ]* calls=[0-9]* converted=\([0-9]*\).*/\1/p' \
                            "$log.err" | awk '{ s += $1 } END { print s + 0 }')
            calls=$(sed -n 's/.*summary [^ ]* calls=\([0-9]*\) .*/\1/p' \
                        "$log.err" | awk '{ s += $1 } END { print s + 0 }')
            note "| $prog | $mode ($tol) | ${result#result: } | $converted of $calls |" \
                 "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') |"
            if [[ $status != 0 && $plain_status != 0 && -n $result &&
                  $result == "$plain_result" ]]; then
                echo "$prog under $mode fails as without the shim: '$result'" \
                    >>"$SECTION.library"
                status=0 result="result: as without the shim, 0 failed, 0 errors"
            fi
            [[ $status == 0 ]] ||
                failed "$prog under $mode exited with status $status"
            case $result in
            *" 0 failed, 0 errors"|*" cases pass"|*" cases passed") ;;
            *) failed "$prog under $mode: '${result:-no result line}'" ;;
            esac
            # fp16x3 and tf32x3 convert no convolution; every other
            # program and mode converts calls.
            if [[ $converted == 0 && ! ( $mode == *x3 && $prog == conv* ) ]]; then
                failed "$prog under $mode: no call converted"
            fi
        done
    done
}

# ---- 2. The GEMM and convolution benchmarks -------------------------------
# bench_gemm MODE: gemm_bench's "m n k ms" lines into $LOGS/gemm.MODE.
bench_gemm() {
    local mode=$1 log=$LOGS/gemm.$1
    forced "$mode"
    if ! c_run 60 "${FORCED[@]}" "$B/bin/gemm_bench" \
            --shapes "$GEMM_SHAPES" "${GEMM_ARGS[@]}" >"$log.out" 2>"$log.err"; then
        failed "gemm_bench under $mode (logs/gemm.$mode.err)"
    fi
    sed -n 's/.* m=\([0-9]*\) n=\([0-9]*\) k=\([0-9]*\) .*ms=\([0-9.e+-]*\).*/\1 \2 \3 \4/p' \
        "$log.out" >"$log"
}
# lookup FILE M N K: the time of shape MxNxK in FILE ("m n k ms" lines).
lookup() {
    awk -v m="$2" -v n="$3" -v k="$4" \
        '$1 == m && $2 == n && $3 == k { print $4; exit }' "$1" 2>/dev/null
}
# kernel_times: each kernel of gemm_bench's calls under fp16 at
# $KERNEL_SHAPES (a warm-up call and a timed one per shape), timed alone
# by Nsight Compute when the machine has it: what a converted call's
# scales, casts and GEMM each cost, which the times per call do not
# tell apart (the model's fp16 times are off most at these sizes).
kernel_times() {
    local ncu log=$LOGS/kernels.fp16 cuda=${CUDA_HOME:-/usr/local/cuda}
    note "### Kernels of converted fp16 calls ($KERNEL_SHAPES; Nsight Compute, each kernel timed alone)"
    note ""
    if [[ $DRY == 1 ]]; then
        note "(A dry run: the emulator is no GPU Nsight Compute profiles.)"
        note ""
        return 0
    fi
    ncu=$(command -v ncu || true)
    [[ -z $ncu && -x $cuda/bin/ncu ]] && ncu=$cuda/bin/ncu
    if [[ -z $ncu || -z $PY ]]; then
        note "(No Nsight Compute (\`ncu\`) or no Python here: no kernel times.)"
        note ""
        return 0
    fi
    forced fp16
    if ! c_run 120 "${FORCED[@]}" "$ncu" --csv --metrics gpu__time_duration.sum \
            "$B/bin/gemm_bench" --shapes "$KERNEL_SHAPES" --warmup 1 --reps 1 \
            >"$log.csv" 2>"$log.err"; then
        failed "ncu over gemm_bench under fp16 (logs/kernels.fp16.err)"
        return 0
    fi
    "$PY" - "$log.csv" >>"$SECTION" <<'PY'
import csv, sys

rows = [r for r in csv.reader(open(sys.argv[1], errors="replace"))]
head = next((i for i, r in enumerate(rows) if r[:1] == ["ID"]), None)
col = {name: i for i, name in enumerate(rows[head])} if head is not None else {}
if "Kernel Name" not in col or "Metric Value" not in col:
    print("(Nsight Compute gave no kernel rows: logs/kernels.fp16.csv.)\n")
    sys.exit(0)


def get(r, name):
    i = col.get(name)
    return r[i] if i is not None and i < len(r) else "-"


print("| # | kernel | grid | block | time |")
print("|---|---|---|---|---|")
for r in rows[head + 1:]:
    if len(r) < len(col) or get(r, "Metric Name") not in (
            "-", "gpu__time_duration.sum"):
        continue
    name = get(r, "Kernel Name").replace("|", "/")
    if len(name) > 72:
        name = name[:69] + "..."
    print("| %s | `%s` | %s | %s | %s %s |" % (
        get(r, "ID"), name, get(r, "Grid Size"), get(r, "Block Size"),
        get(r, "Metric Value"), get(r, "Metric Unit")))
print()
PY
}

step_bench() {
    local modes=(none fp16 bf16 tf32 fp16x3 tf32x3) mode m n k base ms row
    for mode in "${modes[@]}"; do
        bench_gemm "$mode"
    done
    note "## 2. Benchmarks"
    note ""
    note "### GEMM: cublasSgemm_v2, time per call ($TIMING), speedup over FP32 without the shim"
    note ""
    note "| shape | FP32 ms | fp16 | bf16 | tf32 | fp16x3 | tf32x3 |"
    note "|---|---|---|---|---|---|---|"
    while read -r m n k base; do
        row="| ${m}x${n}x${k} | $base |"
        for mode in "${modes[@]:1}"; do
            ms=$(lookup "$LOGS/gemm.$mode" "$m" "$n" "$k")
            row+=" ${ms:--} ms, $(ratio "$base" "$ms")x |"
        done
        note "$row"
    done <"$LOGS/gemm.none"
    note ""
    # The emulator's model of this GPU, computed when the bundle was made.
    if [[ -n $MODEL_KEY && -s $B/model/gemm.$MODEL_KEY.none ]]; then
        note "### Modelled over measured time (the emulator's $MODEL_KEY model; 1.00: the model is right)"
        note ""
        note "| shape | FP32 | fp16 | bf16 | tf32 | fp16x3 | tf32x3 |"
        note "|---|---|---|---|---|---|---|"
        local off=0 r modelled measured
        while read -r m n k _; do
            row="| ${m}x${n}x${k} |"
            for mode in "${modes[@]}"; do
                modelled=$(lookup "$B/model/gemm.$MODEL_KEY.$mode" "$m" "$n" "$k")
                measured=$(lookup "$LOGS/gemm.$mode" "$m" "$n" "$k")
                r=$(ratio "$modelled" "$measured")
                row+=" $r |"
                awk -v r="$r" 'BEGIN { exit !(r != "-" && (r > 1.5 || r < 1 / 1.5)) }' &&
                    off=$((off + 1))
            done
            note "$row"
        done <"$B/model/gemm.$MODEL_KEY.none"
        note ""
        note "$off of the modelled times are off by more than 1.5x."
        note ""
    else
        note "(The emulator has no model of this GPU${MODEL_KEY:+ ($MODEL_KEY)}: no comparison.)"
        note ""
    fi
    kernel_times

    note "### Convolutions: conv_bench ($CONV_SHAPE), time per call ($TIMING), speedup over FP32 without the shim"
    note ""
    local conv_modes=(none fp16 bf16 tf32) log
    for mode in "${conv_modes[@]}"; do
        log=$LOGS/conv.$mode
        forced "$mode"
        c_run 60 "${FORCED[@]}" "$B/bin/conv_bench" --shape "$CONV_SHAPE" \
            "${CONV_ARGS[@]}" >"$log.out" 2>"$log.err" ||
            failed "conv_bench under $mode (logs/conv.$mode.err)"
        grep '^result:' "$log.out" | tr ' ' '\n' |
            awk -F= '$1 == "dir" { d = $2 } $1 == "layout" { l = $2 }
                     $1 == "ms" { print d, l, $2 }' >"$log"
    done
    note "| direction | layout | FP32 ms | fp16 | bf16 | tf32 |"
    note "|---|---|---|---|---|---|"
    local dir layout
    while read -r dir layout base; do
        row="| $dir | $layout | $base |"
        for mode in "${conv_modes[@]:1}"; do
            ms=$(awk -v d="$dir" -v l="$layout" '$1 == d && $2 == l { print $3; exit }' \
                     "$LOGS/conv.$mode")
            row+=" ${ms:--} ms, $(ratio "$base" "$ms")x |"
        done
        note "$row"
    done <"$LOGS/conv.none"
}

# ---- 3. The known risks of real hardware -----------------------------------
risk_solver() {
    note "### cuSOLVER (a library built on cuBLAS): residuals plain and under \`AMPSHIM_MODE=fp16\`"
    note ""
    local status=0 log=$LOGS/solver
    c_run 60 "$B/bin/solver_check" "${SOLVER_ARGS[@]}" \
        >"$log.plain.out" 2>"$log.plain.err" || status=$?
    if [[ $status == 77 ]]; then
        note "Not run: $(sed -n 's/^skip: //p' "$log.plain.out" | head -1)."
        note ""
        return
    fi
    local shim_status=0
    c_run 60 LD_PRELOAD="$B/lib/libampshim.so" AMPSHIM_MODE=fp16 \
        AMPSHIM_REPORT="$log.json" "$B/bin/solver_check" \
        "${SOLVER_ARGS[@]}" >"$log.fp16.out" 2>"$log.fp16.err" || shim_status=$?
    note "Exit status plain $status, under the shim $shim_status."
    note ""
    note "| routine | residual plain | residual under fp16 | under fp16, also |"
    note "|---|---|---|---|"
    local routine
    for routine in potrf syevd; do
        note "| $routine | $(grep "routine=$routine" "$log.plain.out" | tr ' ' '\n' | sed -n 's/^residual=//p') |" \
             "$(grep "routine=$routine" "$log.fp16.out" | tr ' ' '\n' | sed -n 's/^residual=//p') |" \
             "$(grep "routine=$routine" "$log.fp16.out" | cut -d' ' -f2- | tr ' ' '\n' | grep -E '^(info|orth|ms)=' | tr '\n' ' ')|"
    done
    note ""
    note "Sites the report shows (module:function api counts):"
    note ""
    note '```'
    digest sites "$log.json" >>"$SECTION"
    note '```'
    note ""
}
risk_graph() {
    note "### A converted call captured in a CUDA graph (\`graph_nodes\`)"
    note ""
    note "| run | exit | nodes by type | instantiate, a second instance | as a child graph | launch |"
    note "|---|---|---|---|---|---|"
    local run log status
    for run in plain fp16; do
        log=$LOGS/graph.$run
        forced "$run"
        status=0
        # The launch's result is checked against the mode's bound.
        c_run 30 "${FORCED[@]}" "$B/bin/graph_nodes" "${GRAPH_ARGS[@]}" \
            --tol "$( [[ $run == plain ]] && echo fp32 || echo "$run")" \
            >"$log.out" 2>"$log.err" || status=$?
        note "| $run | $status | $(grep '^result: nodes=' "$log.out" | cut -d' ' -f2-) |" \
             "$(field instantiate "$log.out"), $(field instantiate_twice "$log.out") |" \
             "$(field child_graph "$log.out") |" \
             "$(field launch "$log.out") $(field err_over_bound "$log.out") |"
    done
    note ""
}
risk_queue() {
    note "### A deep queue (\`deep_queue ${QUEUE_ARGS[*]}\`): host µs per call"
    note ""
    note "A long GEMM, then the GEMMs and convolutions without synchronising; plain,"
    note "under \`ampshim run --mode fp16\` (every call converted) and under the built-in policy."
    note ""
    note "| run | exit | GEMM µs mean | GEMM µs max | conv µs mean | conv µs max | sync ms | check | report |"
    note "|---|---|---|---|---|---|---|---|---|"
    local run log cov status
    for run in plain fp16 built-in; do
        log=$LOGS/queue.$run
        status=0
        cov=-
        if [[ $run == plain ]]; then
            c_run 60 "$B/bin/deep_queue" "${QUEUE_ARGS[@]}" \
                >"$log.out" 2>"$log.err" || status=$?
        else
            local -a mode=()
            [[ $run == built-in ]] || mode=(--mode "$run")
            c_run 60 AMPSHIM_LIBRARY="$B/lib/libampshim.so" \
                "$B/bin/ampshim" run --force --report "$log.json" "${mode[@]}" -- \
                "$B/bin/deep_queue" "${QUEUE_ARGS[@]}" \
                >"$log.out" 2>"$log.err" || status=$?
            cov=$(digest coverage "$log.json")
        fi
        note "| $run | $status | $(field gemm_host_us_mean "$log.out") | $(field gemm_host_us_max "$log.out") |" \
             "$(field conv_host_us_mean "$log.out") | $(field conv_host_us_max "$log.out") |" \
             "$(field sync_ms "$log.out") | $(field check "$log.out") | $cov |"
    done
    note ""
}
risk_events() {
    note "### A timing event's device time (\`event_cost\`)"
    note ""
    note "Memsets back to back on one stream, plain and with an event recorded after each;"
    note "the emulator charges 2.3 µs a timing event and nothing an untimed one, and the shim"
    note "takes the least span between back-to-back events as one record's cost."
    note ""
    note "| exit | µs a memset | µs a timing event | µs an untimed event | back-to-back span µs |"
    note "|---|---|---|---|---|"
    local log=$LOGS/events status=0
    c_run 30 "$B/bin/event_cost" >"$log.out" 2>"$log.err" || status=$?
    note "| $status | $(field op_us "$log.out") | $(field record_us "$log.out") |" \
         "$(field untimed_record_us "$log.out") | $(field back_to_back_us "$log.out") |"
    note ""
    [[ $status == 0 ]] || failed "event_cost: exit status $status"
}
risk_auto() {
    note "### auto's choices over three runs (\`gemm_bench --shapes $AUTO_SHAPES\`, built-in policy)"
    note ""
    local i log
    for i in 1 2 3; do
        log=$LOGS/auto.$i
        c_run 40 AMPSHIM_LIBRARY="$B/lib/libampshim.so" \
            "$B/bin/ampshim" run --force --report "$log.json" -- \
            "$B/bin/gemm_bench" --shapes "$AUTO_SHAPES" "${AUTO_ARGS[@]}" \
            >"$log.out" 2>"$log.err" || note "(run $i: exit status $?)"
        digest choices "$log.json" >"$log.choices"
    done
    if cmp -s "$LOGS/auto.1.choices" "$LOGS/auto.2.choices" &&
       cmp -s "$LOGS/auto.1.choices" "$LOGS/auto.3.choices"; then
        note "Identical in the three runs:"
    else
        note "**Not identical** over the three runs (each run's below):"
    fi
    note ""
    note '```'
    for i in 1 2 3; do
        cmp -s "$LOGS/auto.1.choices" "$LOGS/auto.$i.choices" && [[ $i != 1 ]] && continue
        sed "s/^/run $i: /" "$LOGS/auto.$i.choices" >>"$SECTION"
    done
    note '```'
    note ""
}
risk_error() {
    note "### fp16x3, tf32x3 and tf32 error on this hardware (\`gemm_numerics\`): relative error, and over strict FP32's"
    note ""
    note "| input class | FP32 (pedantic) | fp16x3 | tf32x3 | tf32 |"
    note "|---|---|---|---|---|"
    local mode
    for mode in fp16x3 tf32x3 tf32; do
        c_run 30 LD_PRELOAD="$B/lib/libampshim.so" AMPSHIM_MODE=$mode \
            AMPSHIM_BASELINE=off AMPSHIM_REPORT=off \
            "$B/bin/gemm_numerics" >"$LOGS/numerics.$mode.out" \
            2>"$LOGS/numerics.$mode.err" || note "(gemm_numerics under $mode: exit status $?)"
    done
    # "class name=C ... err=E err_fp32=F": E is the shimmed call's error,
    # F the same call with CUBLAS_PEDANTIC_MATH, which the shim leaves FP32.
    awk '
        FNR == 1 { file++ }
        /^class / {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            name = v["name"]
            if (!(name in order)) { order[name] = ++n; names[n] = name }
            fp32[name] = v["err_fp32"]; err[file, name] = v["err"]
        }
        END {
            for (i = 1; i <= n; i++) {
                c = names[i]; row = "| " c " | " fp32[c] " |"
                for (f = 1; f <= 3; f++) {
                    e = err[f, c]
                    if (e == "") row = row " - |"
                    else if (fp32[c] + 0 > 0) row = row sprintf(" %s (%.2fx) |", e, e / fp32[c])
                    else row = row " " e " |"
                }
                print row
            }
        }' "$LOGS/numerics.fp16x3.out" "$LOGS/numerics.tf32x3.out" \
        "$LOGS/numerics.tf32.out" >>"$SECTION"
    note ""
}
step_risks() {
    note "## 3. Known risks of real hardware"
    note ""
    risk_solver
    risk_graph
    risk_queue
    risk_events
    risk_auto
    risk_error
}

# ---- 4-6. The frameworks ---------------------------------------------------
# framework_run TAG TIMEOUT ARGS...: a Python program plain (TAG.plain)
# or, when TAG ends in .shim, under `ampshim run`; its status in
# $LOGS/TAG.status (77: skipped, with its reason in TAG.out).
framework_run() {
    local tag=$1 limit=$2 status=0
    shift 2
    if [[ $tag == *.shim ]]; then
        py_run "$limit" AMPSHIM_LIBRARY="$B/lib/libampshim.so" \
            "$B/bin/ampshim" run --force --report "$LOGS/$tag.json" -- \
            "$PY" "$@" >"$LOGS/$tag.out" 2>"$LOGS/$tag.err" || status=$?
    else
        py_run "$limit" "$PY" "$@" >"$LOGS/$tag.out" \
            2>"$LOGS/$tag.err" || status=$?
    fi
    echo "$status" >"$LOGS/$tag.status"
    return 0
}
# outcome TAG: what a framework run came to, for a table cell.
outcome() {
    local status device
    status=$(cat "$LOGS/$1.status" 2>/dev/null || echo '?')
    device=$(field device "$LOGS/$1.out")
    case $status in
    0) echo "ok${device:+ ($device)}" ;;
    77) echo "skipped: $(sed -n 's/^skip: //p' "$LOGS/$1.out" | head -1)" ;;
    124|137) echo "stopped at its time limit" ;;
    *) echo "exit status $status: $(grep -v '^ ' "$LOGS/$1.err" | tail -1 | cut -c1-160)" ;;
    esac
}
# judge TAG: a failed check when a run that was not skipped failed.
judge() {
    local status
    status=$(cat "$LOGS/$1.status" 2>/dev/null || echo '?')
    [[ $status == 0 || $status == 77 ]] || failed "$1: $(outcome "$1")"
}
no_python() {
    note "Not run: no Python here${PY_WHY:+ ($PY_WHY)}."
    note ""
}
step_torch() {
    note "## 4. PyTorch, FP32 as users write it"
    note ""
    [[ -n $PY ]] || { no_python; return; }
    note "\`torch_steps.py ${TORCH_ARGS[*]}\`; step time after warm-up, the loss after the same"
    note "steps with the same seed; the shim's runs under \`ampshim run\` (built-in policy);"
    note "\`tf32\`: PyTorch's TF32 switch, \`autocast\`: \`torch.autocast\` with bfloat16;"
    note "\`compile\`: \`torch.compile(mode=\"reduce-overhead\")\` (CUDA graph replays)."
    note ""
    note "| model | run | outcome | ms per step | loss | coverage (report) |"
    note "|---|---|---|---|---|---|"
    # Each row as its run ends; the compiled runs, the longest, last.
    local model run args tag limit cov
    for run in plain shim tf32 autocast compile compile.shim; do
        for model in resnet50 gpt2; do
            args=(--model "$model" "${TORCH_ARGS[@]}")
            limit=$TORCH_LIMIT
            case $run in
            plain|shim) args+=(--variant fp32) ;;
            tf32|autocast) args+=(--variant "$run") ;;
            compile*) args+=(--variant fp32 --compile); limit=$TORCH_COMPILE_LIMIT ;;
            esac
            tag=torch.$model.$run
            framework_run "$tag" "$limit" "$B/python/torch_steps.py" "${args[@]}"
            judge "$tag"
            cov=-
            [[ $run == *shim ]] && cov=$(digest coverage "$LOGS/$tag.json")
            note "| $model | $run | $(outcome "$tag") | $(field ms_per_step "$LOGS/$tag.out") |" \
                 "$(field loss "$LOGS/$tag.out") | $cov |"
        done
    done
    note ""
    note "The shim's step time over the other runs' (below 1: the shim's is shorter):"
    note ""
    note "| model | over plain | over tf32 | over autocast | compiled: shim over plain |"
    note "|---|---|---|---|---|"
    local shim_ms compiled_ms
    for model in resnet50 gpt2; do
        shim_ms=$(field ms_per_step "$LOGS/torch.$model.shim.out")
        compiled_ms=$(field ms_per_step "$LOGS/torch.$model.compile.shim.out")
        note "| $model | $(ratio "$shim_ms" "$(field ms_per_step "$LOGS/torch.$model.plain.out")") |" \
             "$(ratio "$shim_ms" "$(field ms_per_step "$LOGS/torch.$model.tf32.out")") |" \
             "$(ratio "$shim_ms" "$(field ms_per_step "$LOGS/torch.$model.autocast.out")") |" \
             "$(ratio "$compiled_ms" "$(field ms_per_step "$LOGS/torch.$model.compile.out")") |"
    done
    note ""
}
step_jax() {
    note "## 5. JAX"
    note ""
    [[ -n $PY ]] || { no_python; return; }
    note "| model | run | outcome | ms per step | loss | result against plain (rel err) | coverage (report) |"
    note "|---|---|---|---|---|---|---|"
    local model tag
    for model in mlp cnn; do
        for tag in jax.$model.plain jax.$model.shim; do
            if [[ $tag == *plain ]]; then
                framework_run "$tag" "$JAX_LIMIT" "$B/python/jax_steps.py" \
                    --model $model "${JAX_ARGS[@]}" --save "$SCRATCH/jax.$model.saved"
            else
                framework_run "$tag" "$JAX_LIMIT" "$B/python/jax_steps.py" \
                    --model $model "${JAX_ARGS[@]}" --against "$SCRATCH/jax.$model.saved"
            fi
            judge "$tag"
            note "| $model | ${tag##*.} | $(outcome "$tag") | $(field ms_per_step "$LOGS/$tag.out") |" \
                 "$(field loss "$LOGS/$tag.out") | $(field rel_err "$LOGS/$tag.out") |" \
                 "$( [[ $tag == *shim ]] && digest coverage "$LOGS/$tag.json" || echo -) |"
        done
        rm -f "$SCRATCH/jax.$model.saved"
    done
    note ""
}
step_cupy() {
    note "## 6. CuPy"
    note ""
    [[ -n $PY ]] || { no_python; return; }
    note "| run | outcome | matmul ms | matmul rel err | solve ms | solve residual | coverage (report) |"
    note "|---|---|---|---|---|---|---|"
    local tag
    framework_run cupy.plain "$CUPY_LIMIT" "$B/python/cupy_checks.py" "${CUPY_ARGS[@]}"
    framework_run cupy.shim "$CUPY_LIMIT" "$B/python/cupy_checks.py" "${CUPY_ARGS[@]}"
    for tag in cupy.plain cupy.shim; do
        judge "$tag"
        local mm sv
        mm=$(grep 'op=matmul' "$LOGS/$tag.out" 2>/dev/null)
        sv=$(grep 'op=solve' "$LOGS/$tag.out" 2>/dev/null)
        note "| ${tag#cupy.} | $(outcome "$tag") | $(kv ms "$mm") | $(kv rel_err "$mm") |" \
             "$(kv ms "$sv") | $(kv residual "$sv") |" \
             "$( [[ $tag == *shim ]] && digest coverage "$LOGS/$tag.json" || echo -) |"
    done
    note ""
}

# ---- 7. The legacy trainer -------------------------------------------------
step_trainer() {
    note "## 7. The legacy trainer (\`${TRAIN_ARGS[*]}\`, data: $(cat "$B/data/SIZE" 2>/dev/null))"
    note ""
    note "| run | test accuracy | final loss | wall seconds | coverage (report) |"
    note "|---|---|---|---|---|"
    local run t0 t1 status acc=() cov
    for run in plain shim; do
        local -a cmd=("$B/bin/legacy_trainer" "${TRAIN_ARGS[@]}" --data-dir "$B/data")
        [[ $run == shim ]] &&
            cmd=("$B/bin/ampshim" run --force --report "$LOGS/trainer.json" -- "${cmd[@]}")
        status=0
        t0=$(date +%s.%N)
        c_run 120 AMPSHIM_LIBRARY="$B/lib/libampshim.so" "${cmd[@]}" \
            >"$LOGS/trainer.$run.out" 2>"$LOGS/trainer.$run.err" || status=$?
        t1=$(date +%s.%N)
        [[ $status == 0 ]] || failed "the trainer, $run: exit status $status"
        acc+=("$(sed -n 's/^final .*test_acc \([0-9.]*\).*/\1/p' "$LOGS/trainer.$run.out")")
        cov=-
        [[ $run == shim ]] && cov=$(digest coverage "$LOGS/trainer.json")
        note "| $run | ${acc[-1]:--} | $(sed -n 's/^final loss \([^ ]*\).*/\1/p' "$LOGS/trainer.$run.out") |" \
             "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') | $cov |"
    done
    if [[ -n ${acc[0]} && -n ${acc[1]} ]] &&
       ! awk -v a="${acc[0]}" -v b="${acc[1]}" 'BEGIN { d = a - b; exit !(d <= 1 && d >= -1) }'; then
        failed "trainer accuracy: ${acc[1]} under the shim, ${acc[0]} FP32"
    fi
    note ""
}

# ---- The steps, each under its limit ---------------------------------------
# run_step N LIMIT FUNCTION: FUNCTION in a child of this script under
# LIMIT seconds (less when the budget has less left); its section then
# goes into gpu-results.md, with a line saying when it was cut short.
run_step() {
    local n=$1 limit=$(($2 * SCALE)) fn=$3 left status=0 t0 t1
    left=$((DEADLINE - $(date +%s)))
    ((limit > left)) && limit=$left
    SECTION=$LOGS/section.$n.md
    : >"$SECTION"
    rm -f "$SECTION.failed" "$SECTION.library"
    if ((limit < 10)); then
        note "## $n. ($fn) not run: the check's time budget was spent"
        echo "step $n not run: the time budget was spent" >>"$LOGS/failures"
    else
        t0=$(date +%s)
        SECTION=$SECTION timeout -k 5 "$limit" "$SELF" --step "$fn" || status=$?
        t1=$(date +%s)
        if [[ $status == 124 || $status == 137 ]]; then
            note ""
            note "**Stopped at its time limit of $limit s;** the rows above are what it measured."
            echo "step $n stopped at its time limit" >>"$LOGS/failures"
        fi
        if [[ -s $SECTION.failed ]]; then
            note ""
            note "Failed checks:"
            note ""
            sed 's/^/- /' "$SECTION.failed" >>"$SECTION"
        fi
        if [[ -s $SECTION.library ]]; then
            note ""
            note "The libraries' own failures (the same without the shim):"
            note ""
            sed 's/^/- /' "$SECTION.library" >>"$SECTION"
        fi
        echo "step $n ($fn): $((t1 - t0)) s, status $status" >>"$LOGS/steps"
    fi
    { cat "$SECTION"; echo; } >>"$RESULTS"
    tar -C "$LOGS" -czf "$OUT/logs.tar.gz.new" . 2>/dev/null &&
        mv "$OUT/logs.tar.gz.new" "$OUT/logs.tar.gz"
}

# find_python: the python3 that imports torch (else any python3) in $PY.
find_python() {
    local p first=
    for p in $(type -ap python3) /opt/*/.venv/bin/python3 /opt/conda/bin/python3 \
             /usr/local/bin/python3 /usr/bin/python3; do
        [[ -x $p ]] || continue
        [[ -n $first ]] || first=$p
        if "$p" -c 'import torch' >/dev/null 2>&1; then
            PY=$p
            return
        fi
    done
    PY=$first
    [[ -n $PY ]] || PY_WHY="no python3 on PATH or in the usual places"
}

# nvidia_libs: the directories holding NVIDIA's libraries, for the C
# programs, in $CLIB: per library the first that has it of the toolkit's
# (CUDA_HOME, CUDA_PATH, else /usr/local/cuda), the nvidia-* wheels'
# beside $PY and the driver's. Writes what it found to $LOGS/libraries.
nvidia_libs() {
    local -a dirs=() found=()
    local root d lib
    local roots=(${CUDA_HOME:-} ${CUDA_PATH:-})
    ((${#roots[@]})) || roots=(/usr/local/cuda)
    for root in "${roots[@]}"; do
        for d in "$root/lib64" "$root/lib" "$root/targets/x86_64-linux/lib"; do
            [[ -d $d ]] && dirs+=("$d")
        done
    done
    if [[ -n $PY ]]; then
        while IFS= read -r d; do
            [[ -n $d ]] && dirs+=("$d")
        done < <("$PY" - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for base in nvidia.__path__:
    for lib in sorted(glob.glob(os.path.join(base, "*", "lib")) +
                      glob.glob(os.path.join(base, "*", "*", "lib"))):
        print(lib)
EOF
)
    fi
    dirs+=(/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64)
    : >"$LOGS/libraries"
    for lib in libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 \
               libcudnn.so.9 libcusolver.so.12; do
        for d in "${dirs[@]}"; do
            if [[ -e $d/$lib ]]; then
                echo "$lib $d" >>"$LOGS/libraries"
                [[ " ${found[*]} " == *" $d "* ]] || found+=("$d")
                continue 2
            fi
        done
        echo "$lib (not found)" >>"$LOGS/libraries"
    done
    CLIB=$(IFS=:; echo "${found[*]}")
    CLIB=${CLIB:+$CLIB:}$B/lib
}

# model_key NAME: the emulator's model of a GPU of that name, or nothing.
model_key() {
    case $1 in
    *H200*) echo h200 ;;
    *H100*) echo h100 ;;
    *B200*) echo b200 ;;
    *A100*) echo a100 ;;
    *L4*) echo l4 ;;
    *4090*) echo rtx4090 ;;
    *V100*) echo v100 ;;
    *T4*) echo t4 ;;
    esac
}

# sizes: what each step runs, on a GPU or in a dry run on the emulator.
sizes() {
    if [[ $DRY == 1 ]]; then
        GEMM_SHAPES=256x256x256,512x512x512
        GEMM_ARGS=(--warmup 2 --reps 1)
        KERNEL_SHAPES=256x256x256
        CONV_SHAPE=2,16,16,8,8,3
        CONV_ARGS=(--warmup 1 --reps 1)
        SOLVER_ARGS=(--n 64)
        GRAPH_ARGS=(--n 64)
        QUEUE_ARGS=(--long 256 --gemms 100 --convs 10 --gemm-size 64)
        AUTO_SHAPES=1024x1024x512,1024x1024x1024
        AUTO_ARGS=(--warmup 4 --reps 4)
        TORCH_ARGS=(--size tiny --device auto --steps 2 --warmup 1)
        JAX_ARGS=(--size tiny --steps 2 --warmup 1)
        CUPY_ARGS=(--size tiny)
        TRAIN_ARGS=(--train 512 --test 256 --epochs 1 --seed 3)
        # The emulator computes on this machine's CPU: each limit four
        # times the GPU's.
        SCALE=4
    else
        GEMM_SHAPES=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192
        GEMM_SHAPES+=,8192x8192x256,8192x256x8192,256x8192x8192
        GEMM_ARGS=(--warmup 3 --reps 10)
        KERNEL_SHAPES=1024x1024x1024,2048x2048x2048
        CONV_SHAPE=64,256,256,56,56,3
        CONV_ARGS=(--warmup 3 --reps 10)
        SOLVER_ARGS=(--n 1024)
        GRAPH_ARGS=(--n 1024)
        # Shapes over the built-in policy's min-size, so that it converts.
        QUEUE_ARGS=(--long 8192 --gemms 2000 --convs 200 --gemm-size 1536
                    --conv 32,64,64,28,28,3)
        AUTO_SHAPES=1024x1024x1024,2048x2048x2048,4096x1024x1024
        AUTO_ARGS=(--warmup 10 --reps 40)
        TORCH_ARGS=(--size full --device cuda)
        JAX_ARGS=(--size full)
        CUPY_ARGS=(--size full)
        TRAIN_ARGS=(--epochs 1 --seed 3)
        SCALE=1
    fi
    TORCH_LIMIT=45 TORCH_COMPILE_LIMIT=100 JAX_LIMIT=30 CUPY_LIMIT=25
}

main() {
    DRY=0
    LOGS=
    local budget=
    while [[ $# -gt 0 ]]; do
        case $1 in
        --dry-run) DRY=1; shift ;;
        --logs) LOGS=${2:-}; [[ -n $LOGS ]] || usage; shift 2 ;;
        --budget) budget=${2:-}; [[ $budget =~ ^[0-9]+$ ]] || usage; shift 2 ;;
        -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; usage ;;
        *) break ;;
        esac
    done
    [[ $# == 1 ]] || usage
    OUT=$1

    # Whatever environment this starts in: a usable PATH, no shim settings.
    export PATH=${PATH:-/usr/local/bin:/usr/bin:/bin}:/usr/local/nvidia/bin:/usr/local/cuda/bin
    local emu_gpu=${AMPSHIM_EMU_GPU:-h200}
    unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
    export AMPSHIM_LOG_LEVEL=warn PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
    export HOME=${HOME:-/tmp}

    local gpus=
    gpus=$(nvidia-smi -L 2>/dev/null)
    if [[ -z $gpus && $DRY == 0 ]]; then
        echo "run.sh: no NVIDIA GPU here (nvidia-smi -L lists none): nothing to" \
             "check; --dry-run runs the steps on the emulator (a bundle made" \
             "with --dry-run)"
        exit 0
    fi
    if [[ $DRY == 1 && ! -d $B/emu ]]; then
        echo "run.sh: this bundle carries no emulator: make it with" \
             "scripts/gpu-check.sh --bundle DIR --dry-run" >&2
        exit 2
    fi
    mkdir -p "$OUT" || exit 2
    OUT=$(cd "$OUT" && pwd)
    LOGS=${LOGS:-$OUT/logs}
    mkdir -p "$LOGS" || exit 2
    LOGS=$(cd "$LOGS" && pwd)
    rm -f "$LOGS/failures" "$LOGS/steps"
    RESULTS=$OUT/gpu-results.md
    sizes
    budget=${budget:-$((540 * SCALE))}
    DEADLINE=$(($(date +%s) + budget))
    local started=$(date +%s)
    # Large files the steps pass between runs, kept out of the logs.
    SCRATCH=$(mktemp -d)
    trap 'rm -rf "$SCRATCH"' EXIT

    PY= PY_WHY=
    find_python
    local gpu_name driver
    if [[ $DRY == 1 ]]; then
        # The emulator models an H200 unless AMPSHIM_EMU_GPU names another.
        export AMPSHIM_EMU_GPU=$emu_gpu
        MODEL_KEY=$AMPSHIM_EMU_GPU
        gpu_name="emulated $(tr a-z A-Z <<<"$MODEL_KEY") (dry run)"
        driver="none (the CPU device emulator)"
        CLIB=$B/emu:$B/lib
        echo "(the CPU device emulator: $B/emu)" >"$LOGS/libraries"
        TIMING=modelled
    else
        gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
        driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
        MODEL_KEY=$(model_key "$gpu_name")
        nvidia_libs
        TIMING=measured
    fi
    export B OUT LOGS DRY CLIB PY PY_WHY MODEL_KEY TIMING SCALE SCRATCH
    export TORCH_LIMIT TORCH_COMPILE_LIMIT JAX_LIMIT CUPY_LIMIT GEMM_SHAPES CONV_SHAPE
    export AUTO_SHAPES KERNEL_SHAPES
    # Arrays travel to the steps as their words.
    local name
    for name in GEMM_ARGS CONV_ARGS SOLVER_ARGS GRAPH_ARGS QUEUE_ARGS AUTO_ARGS \
                TORCH_ARGS JAX_ARGS CUPY_ARGS TRAIN_ARGS; do
        local -n arr=$name
        export "${name}_WORDS=${arr[*]}"
    done

    {
        echo "# $(date -u +%Y-%m-%d): $gpu_name, driver $driver"
        echo
        echo "$(cat "$B/MANIFEST" 2>/dev/null | head -1). Times $TIMING."
        echo "Python: ${PY:-none}$( [[ -n $PY ]] && "$PY" -c 'import sys; print(" (" + sys.version.split()[0] + ")")' 2>/dev/null)."
        echo "Libraries:"
        echo
        echo '```'
        cat "$LOGS/libraries"
        echo '```'
        echo
    } >"$RESULTS"
    [[ -n $gpus ]] && echo "$gpus" >"$LOGS/nvidia-smi"

    # The limits add up to 540 s: the whole check within 9 minutes.
    run_step 1 60 step_examples
    run_step 2 60 step_bench
    run_step 3 75 step_risks
    run_step 4 240 step_torch
    run_step 5 45 step_jax
    run_step 6 25 step_cupy
    run_step 7 35 step_trainer

    local failures=0
    [[ -s $LOGS/failures ]] && failures=$(wc -l <"$LOGS/failures")
    {
        echo "**$failures failed checks** in $(($(date +%s) - started)) s."
        if ((failures)); then
            echo
            sed 's/^/- /' "$LOGS/failures"
        fi
        echo
    } >>"$RESULTS"
    tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null
    echo "run.sh: wrote $RESULTS; $failures failed checks"
    ((failures == 0))
}

SELF=$(readlink -f "${BASH_SOURCE[0]}")
B=$(dirname "$SELF")
if [[ ${1:-} == --step ]]; then
    # A step, in a child under its own time limit (run_step).
    for name in GEMM_ARGS CONV_ARGS SOLVER_ARGS GRAPH_ARGS QUEUE_ARGS AUTO_ARGS \
                TORCH_ARGS JAX_ARGS CUPY_ARGS TRAIN_ARGS; do
        words=${name}_WORDS
        read -r -a "$name" <<<"${!words:-}"
    done
    "$2"
    exit 0
fi
main "$@"
