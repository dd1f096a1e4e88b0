#!/usr/bin/env bash
# Installs the Debian packages ampshim needs to build and test (as root, or
# through sudo), and checks that the CUDA 13 toolkit is present.
set -euo pipefail

# libclang-rt-dev: libFuzzer for the parser's fuzz target (clang builds).
# valgrind: callgrind for scripts/bench_overhead.sh.
# libopenblas-dev: the emulator's FP32 products; python3-numpy: the
# reference scripts/bench_emu.sh times them against.
# g++: the emulator compiles the kernels' CUDA source for the host as C++.
# groff-base, man-db: the manual pages' tests render them
# (tests/man/check_man.py) and find the installed ones with man.
# chromium, fonts-dejavu-core: the test report_html opens the page of
# `ampshim report --html` in headless Chromium and keeps screenshots.
# openmpi-bin, libopenmpi-dev: mpirun, and MPI for the data-parallel
# trainer (examples/legacy_trainer_mpi) and its test trainer_mpi.
# python3-torch: PyTorch on the CPU for the test python_programs, which
# runs examples/python/torch_steps.py's models at tiny size.
packages=(meson ninja-build pkg-config gcc g++ clang libclang-rt-dev
          libcmocka-dev libelf-dev libopenblas-dev
          python3 python3-numpy binutils zlib1g-dev dataset-fashion-mnist
          valgrind groff-base man-db chromium fonts-dejavu-core
          openmpi-bin libopenmpi-dev python3-torch)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
        as_root=()
    elif command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "setup: missing packages: ${missing[*]}" >&2
        echo "setup: run as root (or install sudo) to install them" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    install=("${as_root[@]}" apt-get install -y --no-install-recommends
             "${missing[@]}")
    # The package lists may be stale or absent: update only if needed.
    if ! "${install[@]}"; then
        "${as_root[@]}" apt-get update
        "${install[@]}"
    fi
fi

# The CUDA 13 toolkit: nvcc for the kernels, headers and libraries for
# the examples. It is not a Debian package; NVIDIA's installer puts it in
# /usr/local/cuda.
if ! cuda_root=$("$(dirname "${BASH_SOURCE[0]}")/cuda_root.sh"); then
    echo "setup: the CUDA 13 toolkit is missing: no nvcc on PATH or in" \
         "/usr/local/cuda/bin" >&2
    echo "setup: install it from https://developer.nvidia.com/cuda-downloads" \
         "(cuda-toolkit-13-0 or later)" >&2
    exit 1
fi
nvcc=$cuda_root/bin/nvcc
release=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p')
if [[ -z $release || $release -lt 13 ]]; then
    echo "setup: $nvcc is CUDA ${release:-of unknown version}; ampshim" \
         "needs CUDA 13 or later" >&2
    exit 1
fi
for f in include/cublas_v2.h include/cuda_runtime_api.h include/cuda.h; do
    if [[ ! -e $cuda_root/$f ]]; then
        echo "setup: the CUDA toolkit in $cuda_root lacks $f" >&2
        exit 1
    fi
done
if ! compgen -G "$cuda_root/lib*/libcublas.so*" >/dev/null &&
   ! compgen -G "$cuda_root/targets/*/lib/libcublas.so*" >/dev/null; then
    echo "setup: the CUDA toolkit in $cuda_root lacks libcublas" \
         "(install the cuBLAS package of CUDA 13)" >&2
    exit 1
fi
echo "setup: build tools present; CUDA $release toolkit in $cuda_root"
