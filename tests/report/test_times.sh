#!/usr/bin/env bash
# The times the shim reports add up with what the program's own CUDA
# events measure: gemm_bench times each of its GEMMs with cudaEvents
# (three shapes, one call each, then four each), bare and under
# `ampshim run --mode fp16` and `--mode tf32`, on the emulator:
# - the time the report says the shim saved (or added) is within 10 % of
#   the difference between the program's own times bare and under the
#   shim: a converted call's first run is measured beside FP32 and
#   compared with it, and the program waits for all of it;
# - the device time of the intercepted calls (totals.device_ms) is within
#   10 % of the program's own total under the shim, no call left untimed;
# - the run's wall time is there and longer than that;
# - the exit's "time:" line, `ampshim report`'s and the page's say the
#   same figures as the report's JSON;
# - small calls the built-in policy keeps FP32 (min-size: 64x64x64, after
#   a large shape's calls) are timed by sample: no call untimed, the
#   device time within 10 % of the program's own, and the small shape's
#   calls at their samples' mean, with the device time of the timing
#   events the shim recorded for them, within 10 % of the program's time
#   of them;
# - many calls of one shape under `--mode tf32`, most of them not timed
#   (sampled) and estimated at the timed ones' mean: the saved and device
#   times still within 10 % of the program's own events.
# usage: test_times.sh GEMM_BENCH LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5
tmp=$(mktemp -d /tmp/ampshim-times-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$lib
cd "$tmp"

fail() {
    echo "times test: $*" >&2
    for f in "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -30 "$f" >&2; }
    done
    exit 1
}

shapes=1024x1024x1024,2048x512x1024,512x512x2048
for reps in 1 4; do
    "$prog" --shapes "$shapes" --warmup 0 --reps "$reps" \
        >"bare$reps.out" 2>"bare$reps.err" || fail "bare, $reps reps"
    for mode in fp16 tf32; do
        name=$mode$reps
        env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" \
            "$tool" run --mode "$mode" --report "$name.json" -- "$prog" \
            --shapes "$shapes" --warmup 0 --reps "$reps" \
            >"$name.out" 2>"$name.err" || fail "$name: the run failed"
        "$tool" report "$name.json" >"$name.report.out" \
            2>"$name.report.err" || fail "$name: ampshim report"
        "$tool" report "$name.json" --html "$name.html" \
            >/dev/null 2>"$name.html.err" || fail "$name: the page"
    done
done

# Kept FP32 by sample, and converted calls sampled.
env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" "$tool" run --report small.json \
    -- "$prog" --shapes 1024x1024x1024,64x64x64 --warmup 0 --reps 200 \
    >small.out 2>small.err || fail "small: the run failed"
"$prog" --shapes 512x512x512 --warmup 0 --reps 300 \
    >barelong.out 2>barelong.err || fail "bare, many calls"
env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" "$tool" run --mode tf32 \
    --report long.json -- "$prog" --shapes 512x512x512 --warmup 0 \
    --reps 300 >long.out 2>long.err || fail "long: the run failed"

"$python" - <<'PY' || fail "the times do not add up"
import html, json, re

bad = []

def program_ms(name):
    """The program's own event time, summed over its shapes and reps."""
    total = 0.0
    for line in open(name + ".out"):
        if line.startswith("shape "):
            f = dict(kv.split("=") for kv in line.split()[1:])
            total += float(f["ms"]) * int(f["reps"])
    return total

def near(what, got, want):
    if not abs(got - want) <= 0.10 * abs(want):
        bad.append(f"{what}: {got:.4f} ms, the program's events {want:.4f}"
                   " ms (over 10 % apart)")

for reps in (1, 4):
    bare = program_ms(f"bare{reps}")
    for mode in ("fp16", "tf32"):
        name = f"{mode}{reps}"
        shim = program_ms(name)
        tot = json.load(open(name + ".json"))["totals"]
        near(f"{name}: saved_ms", tot["saved_ms"], bare - shim)
        near(f"{name}: device_ms", tot["device_ms"], shim)
        if tot["calls_untimed"] != 0:
            bad.append(f"{name}: {tot['calls_untimed']} calls untimed")
        if not tot["wall_ms"] > tot["device_ms"]:
            bad.append(f"{name}: wall_ms {tot['wall_ms']} not above the "
                       f"device time {tot['device_ms']}")
        # The line every output shows, from the same figures.
        saved = tot["saved_ms"]
        want = (f"the intercepted GEMMs and convolutions took "
                f"{tot['device_ms']:.3f} ms of device time of the run's ")
        tail = (f" ms (wall clock); the shim "
                f"{'saved' if saved > 0 else 'added'} {abs(saved):.3f} ms "
                f"{'of' if saved > 0 else 'to'} it")
        exit_line = [l for l in open(name + ".err") if " time: " in l]
        report_line = [l for l in open(name + ".report.out")
                       if l.startswith("time:")]
        page = html.unescape(open(name + ".html").read())
        page_line = re.findall(r'<p id="time">([^<]*)</p>', page)
        for where, lines in (("exit", exit_line), ("report", report_line),
                             ("page", page_line)):
            if len(lines) != 1 or want not in lines[0] or \
                    tail not in lines[0]:
                bad.append(f"{name}: the {where}'s time line {lines!r}, "
                           f"not {want!r}...{tail!r}")
    print(f"{reps} rep(s): bare {bare:.4f} ms; saved by the report and "
          "by the program's events within 10 %")

# Small calls kept FP32 (min-size), timed by sample.
rep = json.load(open("small.json"))
tot = rep["totals"]
near("small: device_ms", tot["device_ms"], program_ms("small"))
if tot["calls_untimed"] != 0:
    bad.append(f"small: {tot['calls_untimed']} calls untimed")
small = [s for site in rep["sites"] for s in site["shapes"]
         if s["shape"].startswith("64x64x64")]
if len(small) != 1 or small[0]["fp32"] != 200 or \
        small[0]["fp32_reasons"].get("min-size") != 200 or \
        not 3 <= small[0]["time"]["fp32_sampled"] < 200:
    bad.append(f"small: the 64x64x64 shape not kept FP32 and sampled: "
               f"{small!r}")
else:
    # The small shape's own share: every call at its samples' mean.
    want = [float(f["ms"]) * int(f["reps"])
            for f in (dict(kv.split("=") for kv in l.split()[1:])
                      for l in open("small.out") if l.startswith("shape "))
            if f["m"] == f["n"] == f["k"] == "64"]
    # The program's own time of them holds the shim's timing events.
    base = small[0]["fp32_baseline_ms"]
    near("small: 64x64x64 at its FP32 samples' mean, with its timing",
         (base or 0.0) * 200 + small[0]["time"]["timing_ms"],
         want[0] if want else float("nan"))

# Converted calls sampled, the others at their mean.
long = json.load(open("long.json"))["totals"]
near("long: saved_ms", long["saved_ms"],
     program_ms("barelong") - program_ms("long"))
near("long: device_ms", long["device_ms"], program_ms("long"))
if long["calls_untimed"] != 0:
    bad.append(f"long: {long['calls_untimed']} calls untimed")
if not 0 < long["calls_converted_estimated"] < 300:
    bad.append(f"long: {long['calls_converted_estimated']} calls estimated "
               "(the sampled-out converted calls)")
print(f"sampled: {tot['calls_fp32_sampled']} small FP32 calls timed of "
      f"200; {long['calls_converted_estimated']} of 300 converted calls "
      "estimated")

if bad:
    print("\n".join(bad))
    raise SystemExit(1)
PY
echo "times: the report's saved and device times agree with the program's" \
     "own events"
