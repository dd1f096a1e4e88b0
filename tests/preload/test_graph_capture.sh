#!/usr/bin/env bash
# The shim inside CUDA graph capture, on the emulator (which holds calls
# to its capture rules: loading a module, creating a handle or querying an
# event during a global or the thread's own capture invalidates it).
# examples/graph_capture captures an SGEMM and a convolution, then
# launches the graph twice and checks both results each time:
# - cold (the process's first calls are the captured ones), in every
#   converting mode and in global and thread-local capture: the capture
#   succeeds, both launches are right, and the two calls stayed FP32 with
#   the fallback reason "cold-capture" in the report;
# - warm (one of each before the capture): the same, and the captured
#   SGEMM converted in the modes that convert under capture;
# - beside (the first calls of the process on another stream or thread
#   while the capture runs): the capture survives the shim's set-up for
#   them, and they convert;
# - the graph calls frameworks make besides cudaGraphInstantiate: the
#   report counts each launch's replayed calls whether the executable
#   graph came from cudaGraphInstantiateWithFlags (PyTorch's CUDAGraph),
#   cudaGraphInstantiateWithParams, a graph that embeds the captured one
#   as a child graph node or a clone of it (cudaGraphClone, the original
#   destroyed), launched by cudaGraphLaunch or cudaGraphLaunch_ptsz (a
#   per-thread default stream build), and after cudaGraphExecUpdate (XLA's re-capture
#   with new buffers) the replays of the graph it was updated with; a cold
#   capture's replays count too, as FP32; a (site, shape) whose first
#   capture ran FP32 stays FP32 in later captures, so that an update with
#   a capture of the same calls is taken; calls kept FP32 for good whose
#   memo was made before the capture from the same call stack
#   (--warm-here under fp32) are captured and replayed all the same;
#   an update the driver refuses
#   because the shim ran a call of the two captures differently (a cold
#   capture's FP32 SGEMM, a warm one's fp16 at another site) is explained
#   once.
# usage: test_graph_capture.sh GRAPH_CAPTURE LIBAMPSHIM EMU_DIR PYTHON3
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3") python=$4
tmp=$(mktemp -d /tmp/ampshim-capture-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"
runs=0

fail() {
    echo "graph capture test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# The summary line's field for an API, e.g. field cublasSgemm_v2 converted.
field() {
    grep -o "summary $1 .*" "$tmp/run.err" | grep -o " $2=[0-9]*" |
        cut -d= -f2
}

# The fallbacks by reason of every shape in the report, "api:reason=n".
fallbacks() {
    "$python" - "$tmp/run.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
for site in report["sites"]:
    for shape in site["shapes"]:
        for reason, n in sorted(shape["fallbacks"].items()):
            print(f"{site['api']}:{reason}={n}")
EOF
}

# run_captured WHAT MODE OKS ARGS...: graph_capture ARGS under the shim in
# MODE, its report in run.json: it exits 0, the capture succeeds and OKS
# lines of results are right.
run_captured() {
    local what=$1 mode=$2 oks=$3 rc=0
    shift 3
    rm -f "$tmp/run.json"
    AMPSHIM_MODE=$mode AMPSHIM_REPORT=$tmp/run.json \
        LD_PRELOAD="$preload$lib" "$prog" "$@" \
        >"$tmp/run.out" 2>"$tmp/run.err" || rc=$?
    [[ $rc == 0 ]] || fail "$what: exit status $rc"
    grep -qx "capture cudaSuccess" "$tmp/run.out" ||
        fail "$what: the capture failed"
    [[ $(grep -c ' ok$' "$tmp/run.out") == "$oks" ]] ||
        fail "$what: the results"
}

for capture in global thread-local; do
    for mode in fp16 bf16 tf32 fp16x3 tf32x3 allow-conversion shadow; do
        for start in cold warm; do
            what="$mode, $start, $capture capture"
            args=(--capture-mode "$capture")
            [[ $start == warm ]] && args+=(--warm)
            run_captured "$what" "$mode" 2 "${args[@]}"
            gemm_conv=$(field cublasSgemm_v2 converted)
            if [[ $start == cold ]]; then
                [[ $gemm_conv == 0 ]] ||
                    fail "$what: a cold captured SGEMM converted"
                reasons=$(fallbacks | tr '\n' ' ')
                [[ $reasons == *"cublasSgemm_v2:cold-capture=1"* ]] ||
                    fail "$what: fallbacks '$reasons'"
                # fp16x3 has no convolution form: FP32 by decision.
                conv="cudnnConvolutionForward:cold-capture=1"
                [[ $mode == fp16x3 || $reasons == *"$conv"* ]] ||
                    fail "$what: fallbacks '$reasons'"
            else
                # Shadow never runs under capture: the warm call only.
                want=2
                [[ $mode == shadow ]] && want=1
                [[ $gemm_conv == "$want" ]] ||
                    fail "$what: $gemm_conv SGEMMs converted, not $want"
                # Convolutions: shadow and allow-conversion (whose check
                # needs a result slot) never run under capture; fp16x3 has
                # no convolution form; tf32x3 (FP32's range, no check)
                # runs as tf32.
                case $mode in
                    shadow | allow-conversion) want=1 ;;
                    fp16x3) want=0 ;;
                esac
                conv_conv=$(field cudnnConvolutionForward converted)
                [[ $conv_conv == "$want" ]] ||
                    fail "$what: $conv_conv convolutions converted, not $want"
                ! fallbacks | grep -q cold-capture ||
                    fail "$what: a warm call fell back as cold"
            fi
            runs=$((runs + 1))
        done
    done
done
# Beside a capture: while the program's capture runs, the process's first
# SGEMM and convolution go to another stream that is not captured, from
# the capturing thread or from another one. The shim's set-up for them
# (module, handles, events) must not invalidate the capture, and they
# convert (but fp16x3's convolutions, which have no such form).
beside_runs=0
for capture in global thread-local; do
    for mode in fp16 bf16 tf32 fp16x3 tf32x3 allow-conversion shadow; do
        for beside in stream thread; do
            what="$mode, beside on another $beside, $capture capture"
            run_captured "$what" "$mode" 3 --capture-mode "$capture" \
                --beside "$beside"
            [[ $(field cublasSgemm_v2 converted) -ge 1 ]] ||
                fail "$what: the SGEMM beside the capture stayed FP32"
            [[ $mode == fp16x3 ||
               $(field cudnnConvolutionForward converted) -ge 1 ]] ||
                fail "$what: the convolution beside the capture stayed FP32"
            beside_runs=$((beside_runs + 1))
        done
    done
done
# replays: "LAUNCHES SGEMM_CALLS SGEMM_CONVERTED CONV_CALLS CONV_CONVERTED"
# from the report's replays, summed over the sites of each API.
replays() {
    "$python" - "$tmp/run.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
out = [r["totals"]["graph_launches"]]
for api in ("cublasSgemm_v2", "cudnnConvolutionForward"):
    for k in ("calls", "converted"):
        out.append(sum(s["replays"][k] for s in r["sites"] if s["api"] == api))
print(*out)
EOF
}
graph_runs=0
# Calls kept FP32 for good whose memo was made before the capture, from
# the same call stack: captured all the same, their replays counted.
run_captured "fp32, warm here" fp32 2 --warm-here
[[ $(replays) == "2 2 0 2 0" ]] ||
    fail "fp32, warm here: replays '$(replays)', not 2 launches of FP32 calls"
for how in flags params child clone per-thread; do
    what="fp16, warm, executable graph by $how"
    args=(--warm --instantiate "$how")
    [[ $how == child ]] && args=(--warm --child)
    [[ $how == clone ]] && args=(--warm --clone)
    [[ $how == per-thread ]] && args=(--warm --launch-per-thread)
    run_captured "$what" fp16 2 "${args[@]}"
    [[ $(replays) == "2 2 2 2 2" ]] ||
        fail "$what: replays '$(replays)', not 2 launches of both converted"
    graph_runs=$((graph_runs + 1))
done
# Cold: the first capture's calls stay FP32 (no set-up under capture); the
# calls between the launches set the shim up. Captured again from another
# function (other sites), in tf32 (one node each, as FP32's: the update
# takes it), they convert, and the second launch replays them.
run_captured "tf32, cold, updated elsewhere" tf32 2 --update elsewhere
[[ $(replays) == "2 2 1 2 1" ]] ||
    fail "tf32, cold, updated elsewhere: replays '$(replays)', not the" \
         "FP32 launch then the converted one"
# Captured again from the same function, as a framework records a step
# again: a (site, shape) whose first capture ran FP32 stays FP32 in later
# captures (reason capture), so the two graphs have the same nodes and
# the update takes the second, even in fp16 (whose converted nodes differ).
run_captured "fp16, cold, updated" fp16 2 --update same
[[ $(replays) == "2 2 0 2 0" ]] ||
    fail "fp16, cold, updated: replays '$(replays)', not 2 FP32 launches"
[[ $(fallbacks | grep -c cold-capture) == 2 ]] ||
    fail "fp16, cold, updated: the first capture not cold"
"$python" - "$tmp/run.json" >kept.txt <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for api in ("cublasSgemm_v2", "cudnnConvolutionForward"):
    print(api, sum(s["fp32_reasons"].get("capture", 0) for s in r["sites"]
                   if s["api"] == api))
EOF
[[ $(tr '\n' ' ' <kept.txt) == "cublasSgemm_v2 1 cudnnConvolutionForward 1 " ]] ||
    fail "fp16, cold, updated: the second capture's calls not kept as" \
         "capture: $(tr '\n' ' ' <kept.txt)"
run_captured "fp16, cold" fp16 2
[[ $(replays) == "2 2 0 2 0" ]] ||
    fail "fp16, cold: replays '$(replays)', not 2 launches of FP32 calls"
run_captured "fp16, warm, child graph, updated" fp16 2 --warm --child \
    --update same
[[ $(replays) == "2 2 2 2 2" ]] ||
    fail "fp16, warm, child graph, updated: replays '$(replays)'"
# From another function the second capture's calls are other sites,
# which convert: a cold capture's FP32 SGEMM and the warm one's fp16 have
# other nodes, the driver refuses the update (the program stops, status
# 2), and the shim says which call it ran differently.
rm -f "$tmp/run.json"
rc=0
AMPSHIM_MODE=fp16 LD_PRELOAD="$preload$lib" "$prog" --update elsewhere \
    >"$tmp/run.out" 2>"$tmp/run.err" || rc=$?
[[ $rc == 2 ]] && grep -q "cudaGraphExecUpdate status=cudaErrorGraphExecUpdateFailure" \
    "$tmp/run.out" || fail "fp16, cold, updated elsewhere: the update did not fail"
[[ $(grep -c "warning: a CUDA graph update failed: the shim ran a captured cublasSgemm_v2 in fp32 in the executable graph and in fp16 in the new capture" "$tmp/run.err") == 1 ]] ||
    fail "fp16, cold, updated elsewhere: the refused update not explained once"
graph_runs=$((graph_runs + 5))
echo "graph capture: $runs runs (7 modes x cold and warm x global and" \
     "thread-local capture), every graph captured, launched twice, right;" \
     "$beside_runs runs with the first calls beside the capture (another" \
     "stream or thread), the capture intact, those calls converted;" \
     "$graph_runs runs of instantiation by flags, parameters and child" \
     "graph, and of executable graph updates, their replays counted"
