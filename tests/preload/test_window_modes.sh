#!/usr/bin/env bash
# The device window counts a kernel's pages the same whether it follows
# the kernels' own loads and stores (the build's default without a
# sanitizer) or their faults (AMPSHIM_EMU_WINDOW=faults): conv_check and
# gemm_suite under the shim in fp16 and bf16, each run both ways, print
# the same results, and every kernel of theirs the same launches, bytes
# and modelled time (AMPSHIM_EMU_KERNEL_STATS=1). The default run's
# window is the one this build has (WINDOW: accesses or faults).
# usage: test_window_modes.sh CONV_CHECK GEMM_SUITE LIBAMPSHIM EMU_DIR WINDOW
set -euo pipefail

conv=$(realpath "$1") gemm=$(realpath "$2") lib=$(realpath "$3")
emu=$(realpath "$4") window=$5
tmp=$(mktemp -d /tmp/ampshim-window-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

fail() {
    echo "window modes test: $*" >&2
    exit 1
}

# run NAME WINDOW MODE PROG [ARGS...]: NAME.out, NAME.err; the program's
# exit status is its own (a tolerance it does not meet) and is kept.
run() {
    local name=$1 win=$2 mode=$3 rc=0
    shift 3
    env ${win:+AMPSHIM_EMU_WINDOW=$win} AMPSHIM_EMU_KERNEL_STATS=1 \
        AMPSHIM_MODE="$mode" AMPSHIM_REPORT=off LD_PRELOAD="$preload$lib" \
        "$@" >"$name.out" 2>"$name.err" || rc=$?
    echo "$rc" >"$name.rc"
}

# kernels NAME: the kernel lines of NAME's statistics, CPU time left out.
kernels() {
    grep '^ampshim-emu: kernel ' "$1.err" | sed 's/ cpu_ms=.*//' | sort
}

total=0
for mode in fp16 bf16; do
    for prog in conv gemm; do
        case $prog in
        conv) cmd=("$conv" --tol "$mode" --repeat 2) ;;
        gemm) cmd=("$gemm") ;;
        esac
        run "$prog-$mode-default" "" "$mode" "${cmd[@]}"
        run "$prog-$mode-faults" faults "$mode" "${cmd[@]}"
        what="$prog $mode"
        grep -qx "ampshim-emu: window $window" "$prog-$mode-default.err" ||
            fail "$what: the default window is not '$window'"
        grep -qx "ampshim-emu: window faults" "$prog-$mode-faults.err" ||
            fail "$what: AMPSHIM_EMU_WINDOW=faults did not count by faults"
        cmp -s "$prog-$mode-default.rc" "$prog-$mode-faults.rc" ||
            fail "$what: exit status $(cat "$prog-$mode-default.rc") and" \
                 "$(cat "$prog-$mode-faults.rc")"
        cmp -s "$prog-$mode-default.out" "$prog-$mode-faults.out" ||
            fail "$what: the results differ between the two windows"
        a=$(kernels "$prog-$mode-default") b=$(kernels "$prog-$mode-faults")
        n=$(grep -c . <<<"$a" || true)
        [[ $n -ge 3 ]] || fail "$what: $n kernels ran, want 3 or more"
        [[ $a == "$b" ]] ||
            fail "$what: the kernels' counts differ:"$'\n'"$(diff \
                <(echo "$a") <(echo "$b"))"
        total=$((total + n))
    done
done
echo "window modes: $total kernels' launches, bytes and modelled times" \
     "the same with the window '$window' and 'faults'"
