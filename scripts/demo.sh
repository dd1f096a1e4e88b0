#!/usr/bin/env bash
# The main job: an unmodified FP32 cuBLAS program (examples/sgemm_check)
# under LD_PRELOAD=libampshim.so, checked against the FP16 error bound; on
# the GPU when there is one, else on the CPU device emulator. Ends with the
# shim's summary.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build

"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$build" gcc

shim=$build/hooks/libampshim.so
prog=$build/examples/sgemm_check
emu=$build/tests/emu
for f in "$shim" "$prog"; do
    [[ -e $f ]] || { echo "demo: $f was not built" >&2; exit 1; }
done

# The shim's own settings come from here, not from the caller's shell.
unset AMPSHIM_DISABLE AMPSHIM_LOG_FILE AMPSHIM_MODE AMPSHIM_EMU_FAIL
export AMPSHIM_SUMMARY=1

echo
if gpus=$(nvidia-smi -L 2>/dev/null) && [[ -n $gpus ]]; then
    echo "demo: running on the GPU: ${gpus%%$'\n'*}"
    env_run=(env)
else
    echo "demo: no GPU (nvidia-smi -L failed): running on the CPU device" \
         "emulator in $emu"
    env_run=(env "LD_LIBRARY_PATH=$emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi
echo "demo: LD_PRELOAD=$shim $prog --tol fp16"
echo
# stderr joins stdout so the shim's summary comes last, after the results.
"${env_run[@]}" LD_PRELOAD="$shim" "$prog" --tol fp16 2>&1
