#!/usr/bin/env bash
# Prints the CUDA toolkit's root folder (the one holding include/ and
# lib64/) of the given nvcc, or of the nvcc on PATH, or of
# /usr/local/cuda/bin/nvcc. nvcc on PATH may be a wrapper script (such as
# /usr/local/bin/nvcc that execs the toolkit's own), so the root is where
# nvcc says it is (the TOP of its compilation steps), not the folder above
# the nvcc that was found. Exits 1, printing nothing, when there is no nvcc.
# usage: scripts/cuda_root.sh [NVCC]
set -euo pipefail

nvcc=${1:-$(command -v nvcc || true)}
if [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]]; then
    nvcc=/usr/local/cuda/bin/nvcc
fi
[[ -n $nvcc && -x $nvcc ]] || exit 1

top=$("$nvcc" -dryrun -x cu -c /dev/null -o /dev/null 2>&1 |
      sed -n 's/^#\$ TOP=//p' | head -n 1 || true)
if [[ -z $top || ! -d $top ]]; then
    top=$(dirname "$nvcc")/..
fi
cd "$top" && pwd -P
