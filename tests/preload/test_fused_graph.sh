#!/usr/bin/env bash
# fused_graph's convolutions fused with a bias and activation (a backend
# plan of a forward convolution and pointwise operations) under the shim
# in every mode and under an auto policy: each run passes its FP64
# reference within TF32's bound, its results are byte for byte the bare
# run's (the plan runs as the program built it), the summary counts the
# 4 plans FP32 for the reason fused-graph, the coverage meter counts them
# kept FP32, and the JSON report conforms to the schema with the reason.
# usage: test_fused_graph.sh FUSED_GRAPH LIBAMPSHIM EMU_DIR PYTHON3 SCHEMA
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3") python=$4
schema=$(realpath "$5")
tmp=$(mktemp -d /tmp/ampshim-fused-graph-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

fail() {
    echo "fused graph test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

hashes() {
    grep '^case ' "$1" | sed 's/.*\(hash=[0-9a-f]*\).*/\1/'
}

"$prog" >"$tmp/bare.out" 2>"$tmp/run.err" || fail "the bare run fails"
[[ $(grep -c '^case .* ok ' "$tmp/bare.out") == 4 ]] ||
    fail "the bare run has not 4 passing cases"
hashes "$tmp/bare.out" >"$tmp/bare.hashes"

printf 'set min-size 0\nrule auto when conv\ndefault fp32\n' >"$tmp/auto.policy"

for mode in fp32 fp16 bf16 tf32 fp16x3 allow-conversion shadow auto; do
    if [[ $mode == auto ]]; then
        set -- AMPSHIM_POLICY="$tmp/auto.policy"
    else
        set -- AMPSHIM_MODE="$mode"
    fi
    env "$@" AMPSHIM_REPORT="$tmp/report.json" \
        LD_PRELOAD="$preload$lib" "$prog" >"$tmp/run.out" 2>"$tmp/run.err" ||
        fail "$mode: the run fails"
    hashes "$tmp/run.out" | cmp -s - "$tmp/bare.hashes" ||
        fail "$mode: results differ from the bare run's"
    grep -q 'summary cudnnBackendExecute calls=4 converted=0 fp32=4 fallback=0 passthrough=0$' \
        "$tmp/run.err" || fail "$mode: not 4 plans counted FP32"
    grep -q '| FP32 calls by reason: fused-graph 4$' "$tmp/run.err" ||
        fail "$mode: the plans are not counted for the reason fused-graph"
    grep -q 'in 4 calls, 100.0 % FP32 within the shim.s reach (converted 0.0 %, kept FP32 100.0 %)' \
        "$tmp/run.err" || fail "$mode: not the coverage of 4 plans kept FP32"
    "$python" "$schema" "$tmp/report.json" >"$tmp/schema.out" 2>&1 ||
        fail "$mode: the report does not conform: $(cat "$tmp/schema.out")"
    "$python" - "$tmp/report.json" <<'PY' || fail "$mode: the report's reasons"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["totals"]["fp32_reasons"] == {"fused-graph": 4}, r["totals"]
assert r["coverage"]["fp32_kept"]["unconverted"]["calls"] == 4
PY
done
echo "fused graph test: 8 runs, each the bare run's results, fused-graph 4"
