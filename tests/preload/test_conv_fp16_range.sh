#!/usr/bin/env bash
# A convolution whose reduction is too long for FP16 once scaled (a
# backward-filter reduction over N P Q = 786,432 terms, more than 2^19):
# - forced fp16: the call runs FP32, the program's own call, byte for
#   byte the bare run's result, with the fallback reason fp16-range;
# - forced bf16 (FP32's range): converted, within the BF16 bound;
# - auto: the fp16 candidate is ruled out ("the converted path could not
#   run it") and the shape never runs FP16.
# usage: test_conv_fp16_range.sh CONV_CHECK LIBAMPSHIM EMU_DIR PYTHON3
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3") python=$4
tmp=$(mktemp -d /tmp/ampshim-fp16-range-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

fail() {
    echo "fp16 range test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# The result hash of the case line in FILE.
hash_of() {
    grep -o 'hash=[0-9a-f]*' "$1" || fail "no case line in $1"
}

# The backward-filter shape's report entry, as "key=value" lines.
shape_facts() {
    "$python" - "$tmp/run.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
for site in report["sites"]:
    if site["api"] != "cudnnConvolutionBackwardFilter":
        continue
    for shape in site["shapes"]:
        print(f"converted={shape.get('converted', 0)}")
        for reason, n in sorted(shape["fallbacks"].items()):
            print(f"fallback {reason}={n}")
        auto = shape.get("auto")
        if auto:
            print(f"choice={auto['choice']}")
            for c in auto["candidates"]:
                print(f"candidate {c['mode']} rejected={c['rejected']}")
EOF
}

# An auto policy with no size floor: auto comes from a policy's rule.
printf 'set min-size 0\nrule auto when conv\ndefault fp32\n' >"$tmp/auto.policy"

# run MODE TOL [ARGS...]: conv_check --long under the shim in MODE (auto:
# under the auto policy).
run() {
    local mode=$1 tol=$2 rc=0
    local -a env=(AMPSHIM_MODE="$mode")
    shift 2
    [[ $mode == auto ]] && env=(AMPSHIM_POLICY="$tmp/auto.policy")
    rm -f "$tmp/run.json"
    env "${env[@]}" AMPSHIM_REPORT="$tmp/run.json" \
        LD_PRELOAD="$preload$lib" "$prog" --long --tol "$tol" "$@" \
        >"$tmp/run.out" 2>"$tmp/run.err" || rc=$?
    [[ $rc == 0 ]] || fail "$mode: exit status $rc"
}

"$prog" --long --tol fp32 >"$tmp/bare.out" 2>&1 || fail "bare run failed"
bare=$(hash_of "$tmp/bare.out")

run fp16 fp32
[[ $(hash_of "$tmp/run.out") == "$bare" ]] ||
    fail "fp16: the result is not the program's own FP32 result"
facts=$(shape_facts)
grep -qx "fallback fp16-range=1" <<<"$facts" ||
    fail "fp16: no fp16-range fallback in the report: $facts"

run bf16 bf16
facts=$(shape_facts)
grep -qx "converted=1" <<<"$facts" || fail "bf16: not converted: $facts"

run auto fp32 --repeat 12
facts=$(shape_facts)
grep -qx "candidate fp16 rejected=the converted path could not run it" \
    <<<"$facts" || fail "auto: the fp16 candidate was not ruled out: $facts"
! grep -qx "choice=fp16" <<<"$facts" || fail "auto chose fp16: $facts"
echo "fp16 range: forced fp16 ran the program's FP32 call (fp16-range)," \
     "bf16 converted, auto ruled fp16 out"
