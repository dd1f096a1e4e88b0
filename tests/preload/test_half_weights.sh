#!/usr/bin/env bash
# mnistCUDNN's FP16 import (examples/half_weights): FP32 weights and input
# converted to HALF by cuDNN's transforms, a HALF and an FP32 convolution.
# Bare and under the shim in every mode: every check passes; the HALF
# weights and the HALF convolution's output are the bare run's bit for bit
# (the shim passes half-precision work through untouched, counted as
# passthrough); the FP32 convolution is converted (shadow: measured beside
# FP32, which the summary counts among the converted) where the mode
# converts convolutions, and within that mode's bound.
# usage: test_half_weights.sh HALF_WEIGHTS LIBAMPSHIM EMU_DIR
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tmp=$(mktemp -d /tmp/ampshim-half-weights-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

fail() {
    echo "half weights test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# hash_of CHECK FILE: the hash a check line printed.
hash_of() {
    sed -n "s/^check $1 .*hash=\([0-9a-f]*\) ok$/\1/p" "$2"
}

rc=0
"$prog" >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "bare: exit status $rc"
grep -qx "result: 3 of 3 checks passed" run.out || fail "bare: the checks"
weights=$(hash_of weights-to-half run.out)
half=$(hash_of half run.out)
[[ -n $weights && -n $half ]] || fail "bare: no hashes"

# mode:tolerance:converted (1: the FP32 convolution converts or, under
# shadow, is measured converted).
for spec in fp16:fp16:1 bf16:bf16:1 tf32:tf32:1 fp16x3:tf32:0 tf32x3:tf32:1 \
            shadow:tf32:1 fp32:tf32:0; do
    IFS=: read -r mode tol converted <<<"$spec"
    rc=0
    AMPSHIM_MODE=$mode AMPSHIM_REPORT=$tmp/run.json LD_PRELOAD="$preload$lib" \
        "$prog" --tol "$tol" >run.out 2>run.err || rc=$?
    [[ $rc == 0 ]] || fail "$mode: exit status $rc"
    grep -qx "result: 3 of 3 checks passed" run.out || fail "$mode: the checks"
    [[ $(hash_of weights-to-half run.out) == "$weights" ]] ||
        fail "$mode: the HALF weights differ from the bare run's"
    [[ $(hash_of half run.out) == "$half" ]] ||
        fail "$mode: the HALF convolution differs from the bare run's"
    grep -Eq "summary cudnnConvolutionForward calls=2 converted=$converted .*passthrough=1( |$)" \
        run.err || fail "$mode: want 2 calls, $converted converted, 1 passed through"
done
echo "half weights: bare and in 7 modes, HALF work passed through bit for" \
     "bit, the FP32 convolution converted by fp16, bf16, tf32 and tf32x3"
