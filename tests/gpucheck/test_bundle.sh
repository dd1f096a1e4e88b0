#!/usr/bin/env bash
# The GPU check's bundles, made from the build tree BUILD and run as on a
# GPU machine: from a copy elsewhere, with no source tree and a bare
# environment (env -i).
#   the GPU bundle: at most 48 MiB, no emulator in it; its run.sh, with
#     no GPU here, says so and exits 0 writing nothing
#   the dry bundle (--dry-run): at most 56 MiB (the emulator and its
#     OpenBLAS besides; it never travels); its run.sh --dry-run runs
#     every step on the emulator it carries, with 0 failed checks, and
#     writes gpu-results.md (every section, the tables' rows) and
#     logs.tar.gz
#   run.sh's lookup of NVIDIA's libraries, in a fake toolkit and wheels
#   --record adds a run's results to a history file, the newest first
# usage: test_bundle.sh SOURCE_ROOT BUILD
set -euo pipefail

root=$1
build=$2
check=$root/scripts/gpu-check.sh
max=$((48 * 1024 * 1024))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }

# size_ok DIR NAME [CAP]: DIR's bytes at most CAP (48 MiB by default).
size_ok() {
    local size cap=${3:-$max}
    size=$(du -sb "$1" | cut -f1)
    echo "$2 bundle: $size bytes"
    ((size <= cap)) || fail "the $2 bundle is $size bytes, over $cap"
}

# ---- The GPU bundle
# One model's times (each takes a minute here; the default is three).
"$check" --bundle "$tmp/gpu" --build "$build" --models h200
size_ok "$tmp/gpu" GPU
has "$tmp/gpu/data/SIZE" "60000 training and 10000 test images"
[[ ! -e $tmp/gpu/emu ]] || fail "the GPU bundle carries the emulator"
for f in run.sh bin/ampshim lib/libampshim.so bin/legacy_trainer \
         python/torch_steps.py python/jax_steps.py python/cupy_checks.py \
         tools/report_digest.py model/gemm.h200.none model/gemm.h200.fp16 data/SIZE; do
    [[ -e $tmp/gpu/$f ]] || fail "the GPU bundle lacks $f"
done
# Making a bundle over an existing directory is refused before any work.
if "$check" --bundle "$tmp/gpu" --build "$build" --models h200 \
        2>"$tmp/again.err"; then
    fail "--bundle over an existing directory succeeded"
fi
has "$tmp/again.err" "exists"

mkdir -p "$tmp/elsewhere"
mv "$tmp/gpu" "$tmp/elsewhere/gpu"
if ! command -v nvidia-smi >/dev/null 2>&1; then
    env -i "$tmp/elsewhere/gpu/run.sh" "$tmp/nogpu" >"$tmp/nogpu.out" 2>&1 ||
        fail "run.sh with no GPU exited with status $?"
    has "$tmp/nogpu.out" "no NVIDIA GPU here"
    [[ ! -e $tmp/nogpu ]] || fail "run.sh with no GPU wrote $tmp/nogpu"
fi
# Where run.sh takes NVIDIA's libraries from: per library, the toolkit's
# first, then the wheels beside the Python, then the driver's.
mkdir -p "$tmp/toolkit/lib64" "$tmp/site/nvidia/cudnn/lib" \
         "$tmp/site/nvidia/cu13/lib" "$tmp/libs"
touch "$tmp/toolkit/lib64/libcublas.so.13" "$tmp/site/nvidia/cudnn/lib/libcudnn.so.9" \
      "$tmp/site/nvidia/cu13/lib/libcublas.so.13" "$tmp/site/nvidia/cu13/lib/libcublasLt.so.13"
env -i CUDA_HOME="$tmp/toolkit" PYTHONPATH="$tmp/site" PY="$(command -v python3)" \
    LOGS="$tmp/libs" "$tmp/elsewhere/gpu/run.sh" --step nvidia_libs
cat "$tmp/libs/libraries"
has "$tmp/libs/libraries" "libcublas.so.13 $tmp/toolkit/lib64"
has "$tmp/libs/libraries" "libcublasLt.so.13 $tmp/site/nvidia/cu13/lib"
has "$tmp/libs/libraries" "libcudnn.so.9 $tmp/site/nvidia/cudnn/lib"
has "$tmp/libs/libraries" "libcusolver.so.12 (not found)"
rm -rf "$tmp/elsewhere/gpu"

# ---- The dry bundle, from a copy, in a bare environment
"$check" --bundle "$tmp/dry" --dry-run --build "$build"
size_ok "$tmp/dry" dry $((56 * 1024 * 1024))
cp -r "$tmp/dry" "$tmp/elsewhere/dry"
rm -rf "$tmp/dry"
out=$tmp/out
status=0
(cd / && env -i "$tmp/elsewhere/dry/run.sh" --dry-run "$out") || status=$?
results=$out/gpu-results.md
echo "---- gpu-results.md"
cat "$results" || true
echo "----"
[[ $status == 0 ]] || fail "run.sh --dry-run exited with status $status"
for section in "## 1. Example programs under the shim" "## 2. Benchmarks" \
               "### GEMM: cublasSgemm_v2" "### Modelled over measured time" \
               "### Kernels of converted fp16 calls" \
               "### Convolutions: conv_bench" "## 3. Known risks of real hardware" \
               "### cuSOLVER" "### A converted call captured in a CUDA graph" \
               "### A deep queue" "### auto's choices over three runs" \
               "### fp16x3, tf32x3 and tf32 error" "## 4. PyTorch" "## 5. JAX" \
               "## 6. CuPy" "## 7. The legacy trainer" "**0 failed checks**"; do
    has "$results" "$section"
done
# Every example program in every mode, within its bound.
[[ $(grep -cE '^\| (sgemm_check|gemm_suite|legacy_sgemm|conv_check|lt_check|conv_graph|conv_fused) \| ' "$results") == 49 ]] ||
    fail "not 49 rows of example programs (7 programs, plain and 6 modes)"
# The GEMM table's two shapes, each with a time and speedup per mode.
[[ $(grep -cE '^\| [0-9]+x[0-9]+x[0-9]+ \| [0-9.]+ \|( [0-9.]+ ms, [0-9.]+x \|){5}$' "$results") == 2 ]] ||
    fail "the GEMM table lacks its rows"
# The convolution table: three directions in two layouts.
[[ $(grep -cE '^\| (fwd|bwd_data|bwd_filter) \| (nchw|nhwc) \| [0-9.]+ \|' "$results") == 6 ]] ||
    fail "the convolution table lacks its six rows"
# The trainer ran plain and under the shim.
grep -qE '^\| plain \| [0-9.]+ \|' "$results" || fail "no plain trainer row"
grep -qE '^\| shim \| [0-9.]+ \| .*calls=[1-9]' "$results" ||
    fail "no trainer row under the shim with its coverage"
tar -tzf "$out/logs.tar.gz" >"$tmp/logs.list" || fail "logs.tar.gz is not a tar file"
grep -q 'trainer.shim.err' "$tmp/logs.list" || fail "logs.tar.gz lacks the raw logs"

# A budget too small for any step: each says so, a failed check, and the
# logs go where --logs says.
status=0
env -i "$tmp/elsewhere/dry/run.sh" --dry-run --budget 5 --logs "$tmp/logs5" \
    "$tmp/out5" >/dev/null 2>&1 || status=$?
[[ $status == 1 ]] || fail "run.sh --budget 5 exited with status $status, not 1"
[[ $(grep -c 'not run: the check.s time budget was spent' "$tmp/out5/gpu-results.md") == 7 ]] ||
    fail "not every step says the budget was spent"
[[ -s $tmp/logs5/libraries && ! -e $tmp/out5/logs ]] || fail "--logs was not followed"
"$tmp/elsewhere/dry/run.sh" --help | grep -q '^usage: run.sh' || fail "run.sh --help"

# ---- --record: the newest first, one title
"$check" --record "$results" --out "$tmp/history.md"
sed -i 's/^# 20[0-9-]*: /# 2000-01-01: /' "$results"
"$check" --record "$results" --out "$tmp/history.md"
[[ $(grep -c '^# Results on real GPUs' "$tmp/history.md") == 1 ]] ||
    fail "the history has not exactly one title"
[[ $(grep -c '^## 20[0-9-]*: emulated' "$tmp/history.md") == 2 ]] ||
    fail "the history has not two runs"
grep -m1 '^## 20' "$tmp/history.md" | grep -q '2000-01-01' ||
    fail "the newest run is not first"

if ((fails)); then
    echo "$fails failures"
    exit 1
fi
echo "ok"
