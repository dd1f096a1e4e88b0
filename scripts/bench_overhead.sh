#!/usr/bin/env bash
# The shim's host cost per call: builds, then runs examples/overhead_bench
# (every hooked entry point on a tiny problem in a tight loop) without the
# shim ("direct"), and under it passing through (AMPSHIM_DISABLE=1),
# decided FP32 by AMPSHIM_MODE=fp32, decided FP32 by the default policy
# (tiny calls stay FP32) and converted (AMPSHIM_MODE=fp16); each setting
# once natively for the wall clock and once under callgrind for the
# instructions and allocations. It prints one table and asserts nothing.
#
# usage: scripts/bench_overhead.sh [--calls N] [--rounds N] [--cg-calls N]
#                                  [--only API[,API...]]
#
# Method (docs/benchmarks.md):
# - ns: the best of --rounds rounds of --calls calls, issued in batches of
#   32 whose synchronisation is not timed. "+ns" is the setting's time per
#   call minus the direct call's.
# - Ir: callgrind collects only the timed issue (--toggle-collect=ob_timed)
#   after a warm-up, one profile per entry point; "shim Ir" is the
#   instructions executed in libampshim.so's own code (exclusive: the
#   vendor and driver calls it makes are not counted) per call.
# - A converted call also runs the emulator's stand-ins for the driver and
#   vendor calls it makes (and, when it harvests, the emulated device work
#   that cuEventQuery lets run), which a GPU system does in its driver or
#   on the GPU; its wall clock is printed but is not the shim's. Its own
#   time, "own ns", is its own instructions at the instruction rate that
#   the direct loop of the same entry point runs at (callgrind's
#   instructions over the wall clock of the direct run).
# - alloc/call: malloc, calloc, realloc, aligned_alloc, posix_memalign and
#   memalign calls made from libampshim.so's code per call (callgrind's call
#   graph), the most over the four settings; "proc" the whole process's
#   extra allocations per call in passthrough and decided FP32 against the
#   direct loop.
# JOBS=N limits the build's parallel jobs.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build
calls=4000
rounds=5
cg_calls=64
only=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --calls) calls=${2:?}; shift 2 ;;
    --rounds) rounds=${2:?}; shift 2 ;;
    --cg-calls) cg_calls=${2:?}; shift 2 ;;
    --only) only=(--only "${2:?}"); shift 2 ;;
    *) echo "usage: scripts/bench_overhead.sh [--calls N] [--rounds N]" \
            "[--cg-calls N] [--only API[,API...]]" >&2
       exit 2 ;;
    esac
done

"$root/scripts/build.sh" "$build" gcc >/dev/null
command -v valgrind >/dev/null ||
    { echo "bench_overhead: valgrind is missing (scripts/setup.sh)" >&2
      exit 1; }

shim=$build/hooks/libampshim.so
prog=$build/examples/overhead_bench
for f in "$shim" "$prog"; do
    [[ -e $f ]] || { echo "bench_overhead: $f was not built" >&2; exit 1; }
done

# The shim's settings come from here, not from the caller's shell.
unset AMPSHIM_DISABLE AMPSHIM_LOG_FILE AMPSHIM_MODE AMPSHIM_EMU_FAIL \
      AMPSHIM_SCRATCH_MAX AMPSHIM_POLICY AMPSHIM_TRACE AMPSHIM_CALL_LOG
export AMPSHIM_SUMMARY=0 AMPSHIM_REPORT=off AMPSHIM_LOG_LEVEL=warn

if gpus=$(nvidia-smi -L 2>/dev/null) && [[ -n $gpus ]]; then
    where="on $(head -n 1 <<<"$gpus")"
    libpath=${LD_LIBRARY_PATH:-}
else
    where="on the CPU device emulator ($build/tests/emu)"
    libpath=$build/tests/emu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[[ -z ${BENCH_KEEP:-} ]] || trap - EXIT

settings=(direct disable fp32 policy fp16)

# setting_env SETTING: the variables of a setting, one per line.
setting_env() {
    case $1 in
    direct) ;;
    disable) printf '%s\n' "LD_PRELOAD=$shim" AMPSHIM_DISABLE=1 ;;
    policy) printf '%s\n' "LD_PRELOAD=$shim" \
                "AMPSHIM_POLICY=$root/policy/default.policy" ;;
    *) printf '%s\n' "LD_PRELOAD=$shim" "AMPSHIM_MODE=$1" ;;
    esac
}

# run SETTING OUT [valgrind...] -- ARGS...: overhead_bench's stdout in OUT.
run() {
    local setting=$1 out=$2
    local -a env_set=() pre=()
    shift 2
    while [[ $1 != -- ]]; do pre+=("$1"); shift; done
    shift
    mapfile -t env_set < <(setting_env "$setting")
    if ! env "LD_LIBRARY_PATH=$libpath" "${env_set[@]}" "${pre[@]}" \
            "$prog" "$@" >"$out" 2>"$tmp/err"; then
        echo "bench_overhead: $setting: overhead_bench failed:" >&2
        cat "$out" "$tmp/err" >&2
        exit 1
    fi
}

for s in "${settings[@]}"; do
    echo "bench_overhead: $s: wall clock" >&2
    run "$s" "$tmp/$s.ns" -- --calls "$calls" --rounds "$rounds" "${only[@]}"
    echo "bench_overhead: $s: callgrind" >&2
    mkdir -p "$tmp/cg-$s"
    # Converted calls run the shim's kernels on the emulator, which opens
    # device pages from a SIGSEGV handler and retries the access: valgrind
    # replays that exactly only one instruction a translation, with every
    # register precise (docs/benchmarks.md).
    precise=()
    [[ $s != fp16 ]] || precise=(--vex-guest-max-insns=1
                                 --vex-iropt-register-updates=allregs-at-each-insn)
    run "$s" "$tmp/$s.cg-out" valgrind --tool=callgrind "${precise[@]}" \
        "--callgrind-out-file=$tmp/cg-$s/cg.%p" --collect-atstart=no \
        '--toggle-collect=ob_timed*' '--dump-after=ob_case_done*' -- \
        --calls "$cg_calls" --rounds 1 --warmup 64 "${only[@]}"
    # One profile per case, in the order the cases ran (cg.PID.1, ...).
    profiles=()
    for ((i = 1; ; i++)); do
        found=("$tmp/cg-$s"/cg.*."$i")
        [[ -e ${found[0]} ]] || break
        profiles+=("${found[0]}")
    done
    python3 "$root/scripts/callgrind_costs.py" libampshim.so \
        "${profiles[@]}" >"$tmp/$s.ir"
done

# One line per case and setting: api ns ir_all ir_shim allocs_all
# allocs_shim, per call.
for s in "${settings[@]}"; do
    sed -n 's/^case api=\([^ ]*\) .* ns_per_call=\([0-9.]*\)$/\1 \2/p' \
        "$tmp/$s.ns" >"$tmp/$s.names"
    sed 's/.*ir_all=\([0-9]*\) ir_object=\([0-9]*\) allocs_all=\([0-9]*\) allocs_object=\([0-9]*\)/\1 \2 \3 \4/' \
        "$tmp/$s.ir" >"$tmp/$s.counts"
    if [[ $(wc -l <"$tmp/$s.names") -ne $(wc -l <"$tmp/$s.counts") ]]; then
        echo "bench_overhead: $s: $(wc -l <"$tmp/$s.names") cases timed," \
             "$(wc -l <"$tmp/$s.counts") profiled" >&2
        exit 1
    fi
    paste -d' ' "$tmp/$s.names" "$tmp/$s.counts" |
        awk -v s="$s" -v n="$cg_calls" \
            '{ printf "%s %s %s %.1f %.1f %.2f %.2f\n", s, $1, $2, $3 / n,
               $4 / n, $5 / n, $6 / n }'
done >"$tmp/all"

echo "Host cost per call $where: every hooked entry point on a tiny problem"
echo "(8x8x8 GEMMs, batches of 2; a 1x8x8x8 convolution with 8 3x3 filters),"
echo "$calls calls x $rounds rounds natively (best round), $cg_calls calls" \
     "under callgrind after 64 warm-up calls."
echo "+ns: minus the direct call's time; shim Ir: instructions in" \
     "libampshim.so's own code;"
echo "own ns: the converted call's own instructions at the direct loop's" \
     "instruction rate;"
echo "wall ns: the converted call's wall clock, emulated driver and vendor" \
     "work included;"
echo "alloc/call: allocations from the shim's code (most over the settings);" \
     "proc: the process's"
echo "extra allocations per call in passthrough and decided FP32 against" \
     "direct (most of the two)."
echo
awk '
{ key = $2; ns[$1, key] = $3; all[$1, key] = $4; shim[$1, key] = $5;
  aall[$1, key] = $6; ashim[$1, key] = $7
  if (!(key in seen)) { seen[key] = 1; order[++count] = key } }
END {
  printf "%-30s %8s | %6s %5s | %6s %5s | %6s %5s | %5s %6s %8s | %5s %5s\n",
         "", "direct", "passthrough", "", "FP32 mode", "", "FP32 policy", "",
         "converted", "", "", "alloc/call", ""
  printf "%-30s %8s | %6s %5s | %6s %5s | %6s %5s | %5s %6s %8s | %5s %5s\n",
         "entry point", "ns", "+ns", "Ir", "+ns", "Ir", "+ns", "Ir",
         "Ir", "own ns", "wall ns", "shim", "proc"
  for (i = 1; i <= count; i++) {
    k = order[i]
    rate = ns["direct", k] > 0 ? all["direct", k] / ns["direct", k] : 0
    own = rate > 0 ? shim["fp16", k] / rate : 0
    a = 0; p = 0
    split("disable fp32 policy fp16", ss, " ")
    for (j = 1; j <= 4; j++) {
      if (ashim[ss[j], k] > a) a = ashim[ss[j], k]
      if (j < 4 && aall[ss[j], k] - aall["direct", k] > p)
        p = aall[ss[j], k] - aall["direct", k]
    }
    printf "%-30s %8.1f | %+6.1f %5d | %+6.1f %5d | %+6.1f %5d | %5d %6.0f %8.0f | %5.2f %5.2f\n",
           k, ns["direct", k],
           ns["disable", k] - ns["direct", k], shim["disable", k],
           ns["fp32", k] - ns["direct", k], shim["fp32", k],
           ns["policy", k] - ns["direct", k], shim["policy", k],
           shim["fp16", k], own, ns["fp16", k], a, p
  }
}' "$tmp/all"
