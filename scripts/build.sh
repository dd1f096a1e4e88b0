#!/usr/bin/env bash
# Configures (or reconfigures) and builds ampshim with warnings as errors.
# usage: scripts/build.sh [BUILD_DIR [gcc|clang [SANITIZERS]]]
#        (default: build gcc; SANITIZERS: address,undefined or thread, a
#        sanitized variant, without -Werror: gcc warns falsely under
#        -fsanitize, and the plain builds hold the warnings)
# JOBS=N limits the parallel jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
compiler=${2:-gcc}
options=(-Dwerror=true)
if [[ -n ${3:-} ]]; then
    options=(-Dwerror=false "-Db_sanitize=$3" -Db_lundef=false)
fi

# The toolkit: CUDA_PATH when it is set, else where nvcc (on PATH, else in
# /usr/local/cuda/bin) says it is. Meson takes the headers and libraries
# from CUDA_PATH and nvcc from PATH.
if [[ -z ${CUDA_PATH:-} ]] && cuda_path=$("$root/scripts/cuda_root.sh"); then
    export CUDA_PATH=$cuda_path
fi
if ! command -v nvcc >/dev/null 2>&1 && [[ -n ${CUDA_PATH:-} ]]; then
    export PATH=$CUDA_PATH/bin:$PATH
fi

if [[ -f $build/build.ninja ]]; then
    meson setup --reconfigure "${options[@]}" "$build" "$root" >/dev/null
else
    case $compiler in
        gcc) cxx=g++ ;;
        clang) cxx=clang++ ;;
        *) cxx=c++ ;;
    esac
    CC=$compiler CXX=$cxx meson setup "${options[@]}" "$build" "$root"
fi
ninja -C "$build" ${JOBS:+-j "$JOBS"}
