#!/usr/bin/env bash
# The whole test suite: gcc build in build/ (every suite but long), then a
# clang build in build-clang/ (unit, emu and abi suites), both -Werror;
# then the sanitized variants: AddressSanitizer + UndefinedBehaviorSanitizer
# in build-asan/ (unit, emu, preload and abi; not the million-call soak)
# and ThreadSanitizer in build-tsan/ (the concurrency tests).
# JOBS=N limits parallel build jobs and tests.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${JOBS:-} ]]; then
    export MESON_TESTTHREADS=$JOBS
fi

"$root/scripts/setup.sh"

echo "== gcc build (build/)"
"$root/scripts/build.sh" "$root/build" gcc
meson test -C "$root/build" --print-errorlogs --no-suite long

echo "== clang build (build-clang/)"
"$root/scripts/build.sh" "$root/build-clang" clang
meson test -C "$root/build-clang" --print-errorlogs \
    --suite unit --suite emu --suite abi

echo "== ASan+UBSan build (build-asan/)"
"$root/scripts/build.sh" "$root/build-asan" gcc address,undefined
meson test -C "$root/build-asan" --print-errorlogs \
    --suite unit --suite emu --suite preload --suite abi --no-suite soak

echo "== TSan build (build-tsan/)"
"$root/scripts/build.sh" "$root/build-tsan" gcc thread
meson test -C "$root/build-tsan" --print-errorlogs --suite concurrency

echo "== all tests passed"
