#!/usr/bin/env bash
# The main job: the unmodified FP32 legacy trainer (examples/legacy_trainer,
# a CNN on Fashion-MNIST with cuBLAS and cuDNN) trained twice with the same
# seed, first plain FP32, then under `ampshim run` with the built-in
# default policy, and the two side by side: final loss and test accuracy,
# the share of the GEMM and convolution work converted, per-site and
# overall speedups of the intercepted work, and where the report and its
# HTML page are. On the GPU when there is one (the whole data set), else
# on the CPU device emulator (a subset sized for a few minutes; times
# modelled).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build

"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$build" gcc

tool=$build/src/ampshim
prog=$build/examples/legacy_trainer
emu=$build/tests/emu
out=$build/demo
for f in "$tool" "$build/hooks/libampshim.so" "$prog"; do
    [[ -e $f ]] || { echo "demo: $f was not built" >&2; exit 1; }
done

# The shim's own settings come from here, not from the caller's shell: the
# built-in default policy decides (no user or system policy file).
unset AMPSHIM_DISABLE AMPSHIM_LOG_FILE AMPSHIM_MODE AMPSHIM_EMU_FAIL \
      AMPSHIM_POLICY AMPSHIM_REPORT AMPSHIM_TRACE AMPSHIM_SCRATCH_MAX
export AMPSHIM_SUMMARY=1
export XDG_CONFIG_HOME=$out/no-config XDG_CONFIG_DIRS=$out/no-config

# The trainer's defaults: batches of 512, 8192 hidden units, lr 0.05,
# momentum 0.9, seed 1; large enough that the default policy converts its
# big GEMMs (policy/default.policy).
echo
if gpus=$(nvidia-smi -L 2>/dev/null) && [[ -n $gpus ]]; then
    echo "demo: running on the GPU: ${gpus%%$'\n'*}"
    env_run=(env)
    args=(--epochs 2)
    what="the whole data set (60000 training, 10000 test images), 2 epochs"
else
    echo "demo: no GPU (nvidia-smi -L failed): running on the CPU device" \
         "emulator in $emu"
    env_run=(env "LD_LIBRARY_PATH=$emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    args=(--epochs 1 --train 20480 --test 2048)
    what="20480 training images (40 steps of 512) and 2048 test images,"
    what+=" 1 epoch: a subset, as the emulator does the math on the CPU"
fi
echo "demo: $what"

rm -rf "$out"
mkdir -p "$out" "$out/no-config"
report=$out/legacy_trainer.json
html=$out/legacy_trainer.html

run_timed() {
    local name=$1 start end
    shift
    start=$(date +%s)
    "$@"
    end=$(date +%s)
    echo "$((end - start))" > "$out/$name.seconds"
}

echo
echo "demo: 1/2 FP32, no shim: $prog ${args[*]}"
run_timed fp32 "${env_run[@]}" "$prog" "${args[@]}" | tee "$out/fp32.txt"

echo
echo "demo: 2/2 under the shim, default policy:" \
     "ampshim run --report $report -- $prog ${args[*]}"
# The shim's summary and per-site table go to stderr: kept in a file and
# shown after the trainer's own lines.
run_timed ampshim "${env_run[@]}" "$tool" run --report "$report" -- \
    "$prog" "${args[@]}" 2> "$out/ampshim.stderr" | tee "$out/ampshim.txt"
cat "$out/ampshim.stderr"

"$tool" report "$report" --html "$html" > "$out/report.txt"

echo
python3 - "$out" "$report" "$html" <<'EOF'
import json, sys

out, report_path, html = sys.argv[1:4]

def trainer(name):
    final = None
    for line in open(f"{out}/{name}.txt"):
        w = line.split()
        if w[:2] == ["final", "loss"]:
            final = (float(w[2]), float(w[4]))
    if final is None:
        sys.exit(f"demo: no final line in {out}/{name}.txt")
    secs = int(open(f"{out}/{name}.seconds").read())
    return final + (secs,)

def num(x, fmt):
    return "-" if x is None else format(x, fmt)

f_loss, f_acc, f_s = trainer("fp32")
s_loss, s_acc, s_s = trainer("ampshim")
r = json.load(open(report_path))
dev, tot = r["device"], r["totals"]
timing = dev["timing"]
gpu = dev["modelled_gpu"] if dev["emulated"] else dev["name"]
label = (f"modelled on {gpu} (CPU emulator)" if timing == "modelled"
         else f"measured on {gpu}")

print("demo: results, same seed and steps")
print(f"  {'':28}{'FP32':>12}{'ampshim':>12}")
print(f"  {'final loss':28}{f_loss:12.4f}{s_loss:12.4f}")
print(f"  {'test accuracy (%)':28}{f_acc:12.2f}{s_acc:12.2f}"
      f"   (difference {s_acc - f_acc:+.2f} points)")
print(f"  {'wall time of the run (s)':28}{f_s:12d}{s_s:12d}")
print()
share = tot["converted_share"]
print(f"  GEMM and convolution work converted: "
      f"{num(None if share is None else 100 * share, '.1f')}% of "
      f"{tot['flops_fp32'] / 1e12:.2f} TFLOP "
      f"({tot['converted']} of {tot['calls']} calls converted, "
      f"{tot['shadow']} of them shadow checks; policy: {r['policy']['source']})")
print()
print(f"  per site and shape, times {label}:")
print(f"  {'site':16} {'api':26} {'shape':30} {'calls':>5} {'conv':>5}"
      f" {'fp32 ms':>9} {'actual ms':>9} {'speedup':>7}")
rows = [(s, sh) for s in r["sites"] for sh in s["shapes"]]
rows.sort(key=lambda x: -(x[1]["flops"]["total"] or 0))
for s, sh in rows:
    t = sh["time"]
    print(f"  {s['function'][:16]:16} {s['api'][:26]:26} {sh['shape'][:30]:30}"
          f" {sh['calls']:5d} {sh['converted']:5d} {t['fp32_ms']:9.3f}"
          f" {t['actual_ms']:9.3f} {num(t['speedup'], '7.2f'):>7}")
print(f"  overall speedup of the intercepted work: "
      f"{num(tot['speedup'], '.2f')} ({tot['fp32_ms']:.3f} ms in FP32, "
      f"{tot['actual_ms']:.3f} ms under the shim, {label}; sites whose "
      f"calls all stayed FP32 are not timed)")
print()
print(f"  report:    {report_path}")
print(f"  HTML page: {html}")
print(f"  table:     {out}/report.txt (ampshim report {report_path})")
EOF
