#!/usr/bin/env bash
# Configures (or reconfigures) and builds ampshim with warnings as errors.
# usage: scripts/build.sh [BUILD_DIR [gcc|clang]]   (default: build gcc)
# JOBS=N limits the parallel jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
compiler=${2:-gcc}

# Meson finds the toolkit through nvcc.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH=/usr/local/cuda/bin:$PATH
fi

if [[ -f $build/build.ninja ]]; then
    meson setup --reconfigure -Dwerror=true "$build" "$root" >/dev/null
else
    CC=$compiler meson setup -Dwerror=true "$build" "$root"
fi
ninja -C "$build" ${JOBS:+-j "$JOBS"}
