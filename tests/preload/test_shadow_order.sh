#!/usr/bin/env bash
# The order of a shadow run's two products (examples/gemm_bench, one
# 1024^3 cublasSgemm_v2 shape, AMPSHIM_MODE=shadow:tf32):
# - the runs take turns: the candidate first on the odd shadow runs of the
#   (site, shape), the FP32 original first on the even ones, as the
#   emulator's call log shows the calls reaching the library;
# - each span is counted as what ran in it: over 1 run (candidate first)
#   and over 4 (two of each order) the report's mean FP32 and candidate
#   times per shadow call are the same, the FP32 one the modelled time
#   of the plain call (gemm_bench without the shim) and several times
#   the TF32 one;
# - with beta 1 the candidate reads C as the call found it (a copy made
#   before either product), not FP32's result: the comparisons stay at
#   TF32's error;
# - a candidate that fails after the FP32 original ran leaves the
#   program FP32's result, the call counted a fallback.
# - convolutions with beta 0 take turns too, through the legacy API
#   (examples/conv_check) and the graph API (examples/conv_graph), each
#   case run twice: under AMPSHIM_MODE=shadow:fp16 every case passes with
#   the bytes it has without the shim, and the trace (AMPSHIM_TRACE) has
#   shadow calls of both orders; a candidate that fails after the
#   original ran leaves the program FP32's bytes, counted a fallback.
# usage: test_shadow_order.sh GEMM_BENCH LIBAMPSHIM EMU_DIR PYTHON
#        CONV_CHECK CONV_GRAPH
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3") python=$4
conv_check=$(realpath "$5") conv_graph=$(realpath "$6")
tmp=$(mktemp -d /tmp/ampshim-shadow-order-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"
shape=1024x1024x1024
conv_orders=

fail() {
    echo "shadow order test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
    done
    exit 1
}

# run CALLS [gemm_bench args]: CALLS calls of the shape under
# shadow:tf32, the report in run.json.
run() {
    local calls=$1
    shift
    rm -f run.json
    env AMPSHIM_MODE=shadow:tf32 AMPSHIM_REPORT="$tmp/run.json" \
        AMPSHIM_EMU_CALL_LOG=1 LD_PRELOAD="$preload$lib" \
        "$prog" --shapes $shape --warmup 0 --reps "$calls" "$@" \
        >run.out 2>run.err || fail "$calls calls: exit status $?"
    [[ -s run.json ]] || fail "$calls calls: no report"
}

# The report's mean FP32 and candidate times per shadow call, and the
# number of shadow calls timed.
means() {
    "$python" - run.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
e = [s for s in r["sites"] if s["api"] == "cublasSgemm_v2"]
assert len(e) == 1, "one site and shape"
t = e[0]["time"]
n = e[0]["shadow"]
print("%d %.9e %.9e" % (n, t["shadow_fp32_ms"] / n,
                        t["shadow_candidate_ms"] / n))
EOF
}

# The plain call's modelled time, without the shim.
rc=0
"$prog" --shapes $shape --warmup 1 --reps 8 >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "bare: exit status $rc"
plain_ms=$(grep -o " ms=[0-9.e+-]*" run.out | cut -d= -f2)

run 1
read -r n1 fp32_1 cand_1 <<<"$(means)" || fail "1 call: the report"
[[ $n1 == 1 ]] || fail "1 call: $n1 shadow calls"

run 4
read -r n4 fp32_4 cand_4 <<<"$(means)" || fail "4 calls: the report"
[[ $n4 == 4 ]] || fail "4 calls: $n4 shadow calls"
# The library's calls in order: (candidate, FP32), (FP32, candidate), ...
order=$(grep -o "call cublas[A-Za-z_0-9]* m=1024 " run.err |
        awk '{print $2}' | tr '\n' ' ')
want="cublasGemmEx cublasSgemm_v2 cublasSgemm_v2 cublasGemmEx"
want="$want $want "
[[ $order == "$want" ]] || fail "the calls' order: $order; want $want"

"$python" - "$plain_ms" "$fp32_1" "$cand_1" "$fp32_4" "$cand_4" <<'EOF' ||
import sys
plain, f1, c1, f4, c4 = map(float, sys.argv[1:])
def same(a, b):
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))
assert same(f1, f4), "FP32 per call: %g over 1 call, %g over 4" % (f1, f4)
assert same(c1, c4), "tf32 per call: %g over 1 call, %g over 4" % (c1, c4)
# gemm_bench's time per call holds its own two event records over 8
# calls (0.6 us a call): within 2 %.
assert abs(f4 - plain) <= 0.02 * plain, "FP32 %g ms, plain %g ms" % (f4, plain)
assert f4 > 3 * c4, "FP32 %g ms, tf32 %g ms" % (f4, c4)
EOF
    fail "the spans: 1 call fp32=$fp32_1 tf32=$cand_1, 4 calls" \
         "fp32=$fp32_4 tf32=$cand_4, plain $plain_ms"

# beta 1: the candidate of an FP32-first run reads C as the call found
# it (a copy made before either product), not FP32's result: the
# report's comparisons stay at TF32's error.
run 4 --beta 1
err=$("$python" - run.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
e = [s for s in r["sites"] if s["api"] == "cublasSgemm_v2"][0]
print("%d %.3e" % (e["errors"]["shadow_calls"], e["errors"]["max_rel"]))
EOF
) || fail "beta 1: the report"
read -r compared err <<<"$err"
[[ $compared == 5 ]] || fail "beta 1: $compared shadow calls compared"
"$python" -c "import sys; sys.exit(0 if float('$err') < 1e-3 else 1)" ||
    fail "beta 1: the candidate differs from FP32 by $err"

# The candidate of an FP32-first run fails after writing part of its
# output (the second cublasGemmEx): the program keeps FP32's result, the
# call is counted a fallback.
rc=0
env AMPSHIM_MODE=shadow:tf32 AMPSHIM_EMU_FAIL=cublasGemmEx:2:partial \
    LD_PRELOAD="$preload$lib" "$prog" --shapes 256x256x256 --warmup 1 \
    --reps 1 >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "failed candidate: exit status $rc"
grep -q "summary cublasSgemm_v2 calls=2 converted=1 fp32=0 fallback=1 " \
    run.err || fail "failed candidate: the summary"
ferr=$(grep -o "max_rel_err=[0-9.e+-]*" run.out | cut -d= -f2)
"$python" -c "import sys; sys.exit(0 if float('$ferr') < 2e-6 else 1)" ||
    fail "failed candidate: the program's result is off by $ferr"

# Convolutions: the program's bytes in both orders, and both orders seen.
for conv in "$conv_check" "$conv_graph"; do
    name=$(basename "$conv")
    rc=0
    "$conv" --repeat 2 >bare.out 2>run.err || rc=$?
    [[ $rc == 0 ]] || fail "$name bare: exit status $rc"
    rc=0
    env AMPSHIM_MODE=shadow:fp16 AMPSHIM_TRACE="$tmp/trace.json" \
        LD_PRELOAD="$preload$lib" "$conv" --repeat 2 >run.out 2>run.err ||
        rc=$?
    [[ $rc == 0 ]] || fail "$name shadow:fp16: exit status $rc"
    # The candidates' errors are FP16's: each compared with the output
    # its own call would have given (beta != 0 runs the candidate first,
    # before the original overwrites what it reads).
    grep -o "summary cudnn[A-Za-z]* .* max_rel_err=[0-9.e+-]*" run.err |
        awk -F'max_rel_err=' '$2 + 0 >= 0.01 { bad = 1 } END { exit bad }' ||
        fail "$name shadow:fp16: a candidate's error of FP16's range or more"
    diff <(grep -o "^case [^ ]* .* hash=[0-9a-f]*" bare.out) \
         <(grep -o "^case [^ ]* .* hash=[0-9a-f]*" run.out) >/dev/null ||
        fail "$name shadow:fp16: the program's bytes differ from a bare run"
    orders=$("$python" - "$tmp/trace.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
ev = sorted((e for e in ev if e.get("ph") == "X"), key=lambda e: e["ts"])
kinds = ["C" if "candidate" in e["name"] else "F" for e in ev]
pairs = [kinds[i] + kinds[i + 1] for i in range(0, len(kinds) - 1, 2)]
print(pairs.count("CF"), pairs.count("FC"), len(kinds) % 2)
EOF
) || fail "$name shadow:fp16: the trace"
    read -r cand_first fp32_first odd <<<"$orders"
    [[ $odd == 0 && $cand_first -gt 0 && $fp32_first -gt 0 ]] ||
        fail "$name shadow:fp16: $cand_first candidate-first and" \
             "$fp32_first FP32-first shadow calls"
    conv_orders+="$name $cand_first/$fp32_first; "
done
# The candidate of the FP32-first run of c1_FW fails after writing part of
# its output (the fourth cudnnConvolutionForward: candidate and original,
# then original and candidate): the program keeps FP32's bytes, the call
# is counted a fallback.
"$conv_check" --only c1_FW --repeat 2 >bare.out 2>run.err ||
    fail "conv_check c1_FW bare: exit status $?"
rc=0
env AMPSHIM_MODE=shadow:fp16 \
    AMPSHIM_EMU_FAIL=cudnnConvolutionForward:4:partial \
    LD_PRELOAD="$preload$lib" "$conv_check" --only c1_FW --repeat 2 \
    >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "conv_check c1_FW, failed candidate: exit status $rc"
diff <(grep -o "^case .* hash=[0-9a-f]*" bare.out) \
     <(grep -o "^case .* hash=[0-9a-f]*" run.out) >/dev/null ||
    fail "conv_check c1_FW, failed candidate: the program's bytes differ"
grep -q "summary cudnnConvolutionForward calls=2 converted=1 fp32=0 fallback=1 " \
    run.err || fail "conv_check c1_FW, failed candidate: the summary"

echo "shadow order: candidate first, then FP32 first, in turn; per-call" \
     "means over 1 and 4 calls fp32=$fp32_4 tf32=$cand_4 ms (plain" \
     "$plain_ms); beta 1 right ($err); a failed candidate" \
     "leaves FP32's result ($ferr); convolutions (candidate-first/FP32-first):" \
     "$conv_orders"
