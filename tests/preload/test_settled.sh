#!/usr/bin/env bash
# Calls kept FP32 for good are counted by a per-thread memo after their
# first (measure/settled.h); the report must not tell the difference.
# Each program runs twice, at the default log level (the memo in use) and
# at the debug level (every call takes the whole path and is logged), and
# every site's and shape's counts must be equal in the two reports:
# - gemm_bench under a policy whose rule counts calls (fp16 from the
#   6th call, FP32 by default before): 5 calls FP32, then 19 converted (a
#   decision a later call changes is not memoized);
# - gemm_bench under a policy that converts 256^3 and keeps 64^3 FP32 by
#   no rule: 208 calls each, the kept shape timed by sample at its calls
#   0, 1, 2, 64, 128 and 192 (6);
# - overhead_bench's GEMM entry points (cuBLAS, the legacy API,
#   cuBLASLt) under the built-in policy (all under min-size) and under
#   AMPSHIM_MODE=fp32.
# The readings of cuBLASLt's descriptors kept by their addresses: with
# lt_check --relayout each product is made first with A's layout object
# set to a wider leading dimension, then set back in place; converted
# (fp16, bf16) every case must read A as the layout now says.
# - calls decided anew at every call (converting decisions) start from
#   what the policy read of the first call like them, kept per thread by
#   the memo's key: overhead_bench's GEMM entry points and gemm_bench's
#   two shapes under AMPSHIM_MODE=fp16, gemm_bench's 256^3 under a rule
#   of auto (it measures, then converts); most calls of every
#   shape converted, every count as the whole path's.
# - lt_check --reuse under AMPSHIM_MODE=fp32: one set of descriptor
#   objects in 18 calls whose other arguments vary (alpha 0 twice, a NULL
#   B once): reasons mode 15, empty 2, invalid 1, as the whole path says.
# - conv_check (cuDNN's legacy API) under the built-in policy and
#   conv_graph (its graph API) under AMPSHIM_MODE=fp32, each case
#   six times (the first three of each shape are timed by sample).
# usage: test_settled.sh GEMM_BENCH OVERHEAD_BENCH LT_CHECK CONV_CHECK
#                        CONV_GRAPH LIBAMPSHIM EMU_DIR PYTHON
set -euo pipefail

gemm_bench=$(realpath "$1") overhead=$(realpath "$2") lt_check=$(realpath "$3")
conv_check=$(realpath "$4") conv_graph=$(realpath "$5") lib=$(realpath "$6")
emu=$(realpath "$7") python=$8
tmp=$(mktemp -d /tmp/ampshim-settled-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_SUMMARY=0
cd "$tmp"

fail() {
    echo "settled test: $*" >&2
    for f in "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}

cat >convert-large.policy <<'EOF'
set min-size 0
rule fp16 when m >= 256
default fp32
EOF

# run NAME ENV... -- PROGRAM ARGS...: once at each log level.
run() {
    local name=$1 level
    shift
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    for level in warn debug; do
        env "${envs[@]}" AMPSHIM_LOG_LEVEL=$level \
            AMPSHIM_LOG_FILE="$tmp/$name-$level.log" \
            AMPSHIM_REPORT="$tmp/$name-$level.json" \
            LD_PRELOAD="$preload$lib" "$@" >"$name-$level.out" \
            2>"$name-$level.err" || fail "$name at $level: exit status $?"
    done
}

cat >convert-later.policy <<'EOF'
set min-size 0
rule fp16 when call > 5
default fp32
EOF

run later AMPSHIM_POLICY="$tmp/convert-later.policy" -- \
    "$gemm_bench" --shapes 64x64x64 --warmup 4 --reps 20
run policy AMPSHIM_POLICY="$tmp/convert-large.policy" -- \
    "$gemm_bench" --shapes 256x256x256,64x64x64 --warmup 8 --reps 200
apis=cublasSgemm_v2,cublasGemmEx,cublasSgemmStridedBatched,cublasSgemm
apis+=,cublasLtMatmul
run builtin -- "$overhead" --only "$apis" --calls 160 --warmup 40 --rounds 1
run mode AMPSHIM_MODE=fp32 -- \
    "$overhead" --only "$apis" --calls 160 --warmup 40 --rounds 1
run reuse AMPSHIM_MODE=fp32 -- "$lt_check" --reuse
run converted AMPSHIM_MODE=fp16 -- \
    "$overhead" --only "$apis" --calls 160 --warmup 40 --rounds 1
run shapes AMPSHIM_MODE=fp16 -- \
    "$gemm_bench" --shapes 256x256x256,128x128x128 --warmup 4 --reps 20
printf 'set min-size 0\nrule auto when gemm\ndefault fp32\n' >auto.policy
run auto AMPSHIM_POLICY="$tmp/auto.policy" -- \
    "$gemm_bench" --shapes 256x256x256 --warmup 4 --reps 40
run conv -- "$conv_check" --repeat 6
run graph AMPSHIM_MODE=fp32 -- "$conv_graph" --repeat 6

"$python" - "$tmp" <<'EOF' || fail "the reports differ (above)"
import json, sys

tmp = sys.argv[1]
COUNTS = ("calls", "converted", "delivered", "shadow", "fp32", "fallback",
          "unmeasured", "fp32_reasons", "fallbacks", "modes")


def counts(path):
    report = json.load(open(path))
    out = {}
    for site in report["sites"]:
        for shape in site["shapes"]:
            key = (site["api"], site["function"], site["offset"],
                   shape["shape"])
            row = {k: shape[k] for k in COUNTS}
            row["fp32_sampled"] = shape["time"]["fp32_sampled"]
            out[key] = row
    return out, report["totals"]["calls"]


bad = 0
for name in ("later", "policy", "builtin", "mode", "reuse", "converted",
             "shapes", "auto", "conv", "graph"):
    memo, memo_calls = counts(f"{tmp}/{name}-warn.json")
    whole, whole_calls = counts(f"{tmp}/{name}-debug.json")
    if memo != whole or memo_calls != whole_calls or not memo:
        bad += 1
        print(f"{name}: with the memo {memo_calls} calls, {memo}")
        print(f"{name}: whole path {whole_calls} calls, {whole}")
    if name == "later":
        rows = list(memo.values())
        if (len(rows) != 1 or rows[0]["calls"] != 24 or
                rows[0]["fp32"] != 5 or rows[0]["converted"] != 19):
            bad += 1
            print(f"later: {rows}, want 24 calls, the first 5 FP32 by the "
                  "default and the rest converted (a rule that counts "
                  "calls settles nothing)")
    if name == "policy":
        kept = [r for k, r in memo.items() if k[3].startswith("64x64x64")]
        if (len(kept) != 1 or kept[0]["calls"] != 208 or
                kept[0]["fp32"] != 208 or kept[0]["fp32_sampled"] != 6 or
                kept[0]["fp32_reasons"] != {"no-rule": 208}):
            bad += 1
            print(f"policy: 64^3 kept FP32: {kept}, want 208 calls by "
                  "no-rule, 6 timed by sample")
    elif name == "reuse":
        rows = list(memo.values())
        want = {"mode": 15, "empty": 2, "invalid": 1}
        if len(rows) != 1 or rows[0]["fp32_reasons"] != want:
            bad += 1
            print(f"reuse: {rows}, want one shape with reasons {want}")
    elif name in ("converted", "shapes", "auto"):
        # Decided anew at every call, from what the policy read of the
        # first call like it: most calls converted.
        if any(r["converted"] * 2 < r["calls"] for r in memo.values()):
            bad += 1
            print(f"{name}: {memo}, want most calls of every shape "
                  "converted")
    elif name in ("builtin", "mode"):
        if memo_calls != 5 * 200:
            bad += 1
            print(f"{name}: {memo_calls} calls counted, want 1000")
sys.exit(1 if bad else 0)
EOF
for mode in fp16 bf16; do
    rc=0
    AMPSHIM_MODE=$mode LD_PRELOAD="$preload$lib" "$lt_check" --relayout \
        --tol "$mode" >relayout.out 2>relayout.err || rc=$?
    [[ $rc == 0 ]] || { cat relayout.out >&2; fail "lt_check --relayout" \
        "under $mode: exit status $rc"; }
    grep -q "^result: \([0-9]*\) of \1 cases pass$" relayout.out ||
        fail "lt_check --relayout under $mode: the result line"
done
for f in *-warn.err *-warn.log; do
    [[ -e $f ]] || continue
    ! grep -q "ampshim.*\(warn\|error\)" "$f" || fail "$f: a warning"
done
echo "settled: counts equal with and without the memo (a policy's kept" \
     "shape 208 calls, 6 timed by sample; five GEMM entry points under" \
     "the built-in policy and AMPSHIM_MODE=fp32; convolutions of both" \
     "cuDNN APIs; converting calls from kept reads under fp16 and auto);" \
     "cuBLASLt layouts" \
     "changed in place read anew under fp16 and bf16"
