#!/usr/bin/env bash
# The main job: the unmodified FP32 legacy trainer (examples/legacy_trainer,
# a VGG-style CNN on Fashion-MNIST with cuBLAS and cuDNN) trained twice with
# the same seed, first plain FP32, then under `ampshim run` with the
# built-in default policy, and the two side by side: final loss and test
# accuracy, the share of the GEMM and convolution work converted (and of
# the convolutions' alone), per-site and overall speedups of the
# intercepted work, and where the report and its HTML page are. On the GPU
# when there is one (the whole data set), else on the CPU device emulator
# (a subset sized for a few minutes; times modelled).
# usage: scripts/demo.sh [--gpu NAME]   (--help: the models' names)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build

# The emulator's GPU models, as tests/emu/model.c names them.
models=$(sed -n 's/^ *\.pub = { \.key = "\([a-z0-9]*\)".*/\1/p' \
    "$root/tests/emu/model.c")
model_list=$(echo $models | sed 's/ /, /g')
usage() {
    cat <<EOF
usage: scripts/demo.sh [--gpu NAME]

Trains examples/legacy_trainer twice with the same seed, plain FP32 and
under 'ampshim run' with the built-in default policy, and prints both side
by side. On the GPU when there is one (nvidia-smi -L), else on the CPU
device emulator's H100 model.

  --gpu NAME  on the CPU device emulator's model of GPU NAME, a GPU
              present or not (AMPSHIM_EMU_GPU=NAME); NAME is one of
              $model_list
  -h, --help  this text
EOF
}
gpu=
while (($#)); do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --gpu)
            (($# >= 2)) || { echo "demo: --gpu needs a name" >&2; exit 2; }
            gpu=$2
            shift 2 ;;
        --gpu=*) gpu=${1#--gpu=}; shift ;;
        *) echo "demo: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -n $gpu ]] && ! grep -qx -- "$gpu" <<<"$models"; then
    echo "demo: unknown GPU model '$gpu' (known: $model_list)" >&2
    exit 2
fi

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
      AMPSHIM_POLICY AMPSHIM_REPORT AMPSHIM_TRACE AMPSHIM_SCRATCH_MAX \
      AMPSHIM_EMU_GPU
export AMPSHIM_SUMMARY=1
export XDG_CONFIG_HOME=$out/no-config XDG_CONFIG_DIRS=$out/no-config

# The trainer's defaults: batches of 512, 1024 hidden units, lr 0.003,
# momentum 0.9, seed 1; large enough that the default policy converts its
# convolutions but the first (1 input channel) and its first fully
# connected layer's GEMMs (policy/default.policy).
echo
if [[ -z $gpu ]] && gpus=$(nvidia-smi -L 2>/dev/null) && [[ -n $gpus ]]; then
    echo "demo: running on the GPU: ${gpus%%$'\n'*}"
    env_run=(env)
    args=(--epochs 2)
    what="the whole data set (60000 training, 10000 test images), 2 epochs"
else
    if [[ -z $gpu ]]; then
        gpu=h100
        echo "demo: no GPU (nvidia-smi -L failed): running on the CPU" \
             "device emulator in $emu, its $gpu model"
    else
        echo "demo: running on the CPU device emulator in $emu, its $gpu" \
             "model (--gpu $gpu)"
    fi
    env_run=(env "LD_LIBRARY_PATH=$emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
             "AMPSHIM_EMU_GPU=$gpu")
    # Steps of 256 images: as much work as 10 of 512, enough steps for
    # auto to measure each shape (three timed shadow calls per candidate)
    # and run its choice.
    args=(--epochs 1 --train 5120 --test 1024 --batch-size 256)
    what="5120 training images (20 steps of 256) and 1024 test images,"
    what+=" 1 epoch: a subset, as the emulator does the math on the CPU"
fi
echo "demo: $what"

rm -rf "$out"
mkdir -p "$out" "$out/no-config"
report=$out/legacy_trainer.json
html=$out/legacy_trainer.html

# Runs the command with its own stdout and stderr; its wall, user and
# system seconds go to $out/NAME.time.
run_timed() {
    local name=$1 TIMEFORMAT='%R %U %S'
    shift
    { time "$@" 2>&3; } 3>&2 2> "$out/$name.time"
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
    wall, user, system = map(float, open(f"{out}/{name}.time").read().split())
    return final + (wall, user + system)

def num(x, fmt):
    return "-" if x is None else format(x, fmt)

f_loss, f_acc, f_s, f_cpu = trainer("fp32")
s_loss, s_acc, s_s, s_cpu = trainer("ampshim")
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
print(f"  {'wall time of the run (s)':28}{f_s:12.1f}{s_s:12.1f}")
print(f"  {'CPU time, user + sys (s)':28}{f_cpu:12.1f}{s_cpu:12.1f}")
print()
share = tot["converted_share"]
print(f"  GEMM and convolution work converted: "
      f"{num(None if share is None else 100 * share, '.1f')}% of "
      f"{tot['flops_fp32'] / 1e12:.2f} TFLOP "
      f"({tot['converted'] - tot['shadow']} of {tot['calls']} calls "
      f"converted, {tot['shadow']} more measured in shadow, their results "
      f"FP32's; policy: {r['policy']['source']})")
conv = [s["flops"] for s in r["sites"] if s["family"] == "conv"]
conv_all = sum(f["total"] for f in conv)
conv_share = (100 * sum(f["converted"] for f in conv) / conv_all
              if conv_all else None)
print(f"  of it convolutions: {num(conv_share, '.1f')}% of "
      f"{conv_all / 1e12:.2f} TFLOP converted")
print()
print(f"  per site and shape, times {label}:")
print(f"  {'site':16} {'api':26} {'shape':30} {'calls':>5} {'conv':>5}"
      f" {'fp32 ms':>9} {'actual ms':>9} {'speedup':>7} {'steady':>7}")
rows = [(s, sh) for s in r["sites"] for sh in s["shapes"]]
rows.sort(key=lambda x: -(x[1]["flops"]["total"] or 0))
unknown = set()
for s, sh in rows:
    t = sh["time"]
    # Times only of calls with an FP32 time: a shape kept FP32 is not
    # timed, a converted one no shadow call measured has none ("-").
    known = t["calls_fp32_measured"] + t["calls_fp32_estimated"] > 0
    if t.get("fp32_unknown_reason"):
        unknown.add(t["fp32_unknown_reason"])
    print(f"  {(s['function'] or '-')[:16]:16} {s['api'][:26]:26}"
          f" {sh['shape'][:30]:30} {sh['calls']:5d}"
          f" {sh['converted'] - sh['modes'].get('shadow', 0):5d}"
          f" {num(t['fp32_ms'] if known else None, '9.3f'):>9}"
          f" {num(t['actual_ms'] if known else None, '9.3f'):>9}"
          f" {num(t['speedup'], '7.2f'):>7}"
          f" {num(t.get('steady_speedup'), '7.2f'):>7}")
for reason in sorted(unknown):
    print(f"  (-: {reason})")
print(f"  conv: calls whose converted result reached the program; steady:"
      f" each shape's FP32 time over its time under auto's choice, once"
      f" measuring is over")
print(f"  overall speedup of the intercepted work: "
      f"{num(tot['speedup'], '.2f')} ({tot['fp32_ms']:.3f} ms in FP32, "
      f"{tot['actual_ms']:.3f} ms under the shim, {label}; sites whose "
      f"calls all stayed FP32 are not timed)")
print()
print(f"  report:    {report_path}")
print(f"  HTML page: {html}")
print(f"  table:     {out}/report.txt (ampshim report {report_path})")
print()
print(f"  steady state: the intercepted GEMMs and convolutions run "
      f"{num(tot.get('steady_speedup'), '.2f')}x as fast as FP32 once "
      f"measuring is over (this run, measuring included: "
      f"{num(tot['speedup'], '.2f')}x)")
print(f"  verdict: {tot.get('verdict', '-')}")
EOF
