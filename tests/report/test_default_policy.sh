#!/usr/bin/env bash
# The built-in policy on the emulator's H100 model (no policy file
# anywhere): every GEMM above its minimum work goes to auto, which decides.
# - 2048x2048x256 (k under 512): auto measures fp16, bf16 and tf32 and
#   converts the later calls with the fastest, tf32, and the steady state
#   is those calls' time against FP32's;
# - 1004x1000x1000 (m not a multiple of 8): fp16 and bf16 are ruled out
#   without a shadow call (their half-precision copies need multiples of
#   8), tf32 alone is measured and converts;
# - 512x256x1024 (134M multiply-adds, under min-size): FP32;
# - on the V100 model, a forward convolution (conv_bench) that auto
#   converts: its steady state is FP32's time over that of the calls that
#   ran converted, which write the caller's output themselves, not over
#   its candidate's in shadow, which writes an output of its own beside
#   FP32's.
# The program's output under the shim matches its FP32 run within the
# tolerance (report_prog prints nothing of its results: the report's
# errors say it).
# usage: test_default_policy.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM
#                               PYTHON3 CHECK_SCHEMA CONV_BENCH
set -euo pipefail

prog=$(realpath "$1") shim=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6")
conv_bench=$(realpath "$7")
tmp=$(mktemp -d /tmp/ampshim-default-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "default policy test: $*" >&2
    for f in "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
    done
    exit 1
}
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$shim AMPSHIM_EMU_GPU=h100
cd "$tmp"

# run NAME M N K: 16 calls of M x N x K from one site (auto takes three
# timed shadow calls per candidate, the first fp16 one a warm-up), under
# the built-in policy, into NAME.json.
run() {
    env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" \
        "$tool" run --report "$1.json" -- "$prog" --calls 16 --m "$2" --n "$3" \
        --k "$4" >"$1.out" 2>"$1.err" || fail "$1: ampshim run failed"
    "$python" "$schema" "$1.json" >"$1-schema.out" || fail "$1.json: schema"
}
run short 2048 2048 256
run unaligned 1004 1000 1000
run small 512 256 1024
# 16 forward convolutions of 925M multiply-adds on the V100 model.
env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" AMPSHIM_EMU_GPU=v100 \
    "$tool" run --report conv.json -- "$conv_bench" \
    --shape 32,64,64,28,28,3 --dirs fwd --layouts nhwc --warmup 0 \
    --reps 16 >conv.out 2>conv.err || fail "conv: ampshim run failed"
"$python" "$schema" conv.json >conv-schema.out || fail "conv.json: schema"

"$python" - <<'PY' || fail "reports"
import json

def shape(name):
    r = json.load(open(name + ".json"))
    assert r["policy"]["source"] == "built-in", r["policy"]
    (site,) = r["sites"]
    (s,) = site["shapes"]
    assert s["calls"] == 16, (name, s["calls"])
    return s

def candidates(s):
    return {c["mode"]: c for c in s["auto"]["candidates"]}

half = "its half-precision copies need dimensions that are multiples of 8"

s = shape("short")
assert s["dims"]["k"] == 256
a = s["auto"]
assert a["state"] == "chosen" and a["choice"] == "tf32", a
c = candidates(s)
assert set(c) == {"fp16", "bf16", "tf32"}, c
for mode in ("fp16", "bf16", "tf32"):
    assert c[mode]["shadow_calls"] >= 1, (mode, c[mode])
assert c["tf32"]["eligible"] and c["tf32"]["speedup"] > 1, c["tf32"]
assert c["tf32"]["max_rel"] <= 5e-3, c["tf32"]
# Later calls ran tf32 (converted counts shadow calls too).
assert s["modes"].get("tf32", 0) >= 2, s["modes"]
# The steady state is theirs: FP32's mean beside the candidate over the
# mean of the timed calls that ran tf32 (not the candidate's shadow mean).
t = s["time"]
timed = s["delivered"] - t["calls_converted_estimated"] - s["unmeasured"]
assert timed >= 1 and t["converted_ms"] > 0, (timed, t)
want = c["tf32"]["fp32_ms"] / (t["converted_ms"] / timed)
assert abs(t["steady_speedup"] - want) <= 1e-9 * want, (t, want)
print("2048x2048x256: tf32, %.2fx, %d of 16 calls tf32"
      % (c["tf32"]["speedup"], s["modes"]["tf32"]))

s = shape("unaligned")
a = s["auto"]
assert a["state"] == "chosen" and a["choice"] == "tf32", a
c = candidates(s)
assert set(c) == {"fp16", "bf16", "tf32"}, c
for mode in ("fp16", "bf16"):
    assert c[mode]["shadow_calls"] == 0, (mode, c[mode])
    assert c[mode]["rejected"] == half, (mode, c[mode])
assert c["tf32"]["eligible"], c["tf32"]
assert s["modes"].get("tf32", 0) >= 5, s["modes"]
print("1004x1000x1000: tf32 alone measured, %d of 16 calls tf32"
      % s["modes"]["tf32"])

s = shape("small")
assert "auto" not in s or s["auto"] is None, s.get("auto")
assert s["fp32"] == 16 and s["converted"] == 0, s
assert s["fp32_reasons"] == {"min-size": 16}, s["fp32_reasons"]
print("512x256x1024: FP32 (min-size)")

(site,) = json.load(open("conv.json"))["sites"]
(s,) = site["shapes"]
a = s["auto"]
assert a["state"] == "chosen" and a["choice"] != "fp32", a
c = candidates(s)[a["choice"]]
t = s["time"]
timed = s["delivered"] - t["calls_converted_estimated"] - s["unmeasured"]
assert timed >= 1 and t["converted_ms"] > 0, (timed, t)
want = c["fp32_ms"] / (t["converted_ms"] / timed)
assert abs(t["steady_speedup"] - want) <= 1e-9 * want, (t, want)
assert t["steady_speedup"] > c["speedup"], (t, c)
print("convolution on the V100 model: %s, steady %.2fx (its candidate "
      "in shadow %.2fx)" % (a["choice"], t["steady_speedup"], c["speedup"]))
PY
echo "default policy: auto decides every GEMM above min-size"
