#!/usr/bin/env bash
# A producer and a consumer on two streams (examples/two_streams):
# - ordered by an event, bare and under the shim in every mode: every
#   round within the mode's bound, and the emulator names no access that
#   nothing orders (the shim's own copies, kernels and scratch keep the
#   program's order);
# - unordered, bare: the rounds still right (queued work runs in queue
#   order, as on a GPU that keeps up) and the emulator names the race
#   once on stderr.
# usage: test_two_streams.sh TWO_STREAMS LIBAMPSHIM EMU_DIR
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tmp=$(mktemp -d /tmp/ampshim-two-streams-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"
unordered_line="with nothing ordering the two"

fail() {
    echo "two streams test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# check WHAT: run.out has three rounds passed; run.err names N races.
check() {
    local what=$1 races=$2
    grep -qx "result: 3 of 3 rounds passed" run.out ||
        fail "$what: the rounds"
    [[ $(grep -c "$unordered_line" run.err || true) == "$races" ]] ||
        fail "$what: want $races unordered accesses named"
}

rc=0
"$prog" >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "bare: exit status $rc"
check bare 0
for mode in fp16:fp16 bf16:bf16 tf32:tf32 fp16x3:fp32 tf32x3:fp32 \
            shadow:fp32 allow-conversion:fp16; do
    rc=0
    AMPSHIM_MODE=${mode%%:*} LD_PRELOAD="$preload$lib" \
        "$prog" --tol "${mode##*:}" >run.out 2>run.err || rc=$?
    [[ $rc == 0 ]] || fail "${mode%%:*}: exit status $rc"
    check "${mode%%:*}" 0
    grep -q "summary cublasSgemm_v2 calls=6 " run.err ||
        fail "${mode%%:*}: the summary's calls"
done
rc=0
"$prog" --unordered >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "bare, unordered: exit status $rc"
check "bare, unordered" 1
echo "two streams: ordered bare and in 6 modes, no unordered access;" \
     "unordered bare: right in queue order, the race named once"
