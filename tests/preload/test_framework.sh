#!/usr/bin/env bash
# examples/framework (a program shaped like a framework: one GEMM wrapper,
# cuBLASLt Linear layers with a bias each, graph-API convolution plans
# from its own cache, backward from a second thread, steps captured into
# CUDA graphs and replayed) at --small, the device running behind the
# host (AMPSHIM_EMU_BEHIND=64).
#
# CHECK framework:
# - bare (the emulator alone): exit 0, every layer within the bound;
# - AMPSHIM_MODE=tf32 and fp16: the program's calls counted in the exit
#   summary and the report (cublasSgemm_v2, cublasLtMatmul,
#   cudnnBackendExecute: as many as it issued), every GEMM and cuBLASLt
#   call converted, fp16 every plan execution too; a forced mode converts
#   the ill-conditioned layer as asked, so its forward product, and only
#   that one, is over the bound (exit 1, one FAIL line: gemm11); twin
#   plans finalized and cuBLASLt heuristic queries bounded by the model's
#   plans and shapes (check_caches);
#   Graph replays in the report: its graph launches the program's
#   replays, each replaying a step's calls of each API, all converted
#   (GEMMs and cuBLASLt) and none provisional;
# - a policy of `rule auto` for GEMMs and convolutions: exit 0 (no layer
#   over the bound, the ill-conditioned one included), the calls counted,
#   the replays counted as above, some provisional (auto still measuring
#   at the capture).
# CHECK tf32_plans: in tf32 every plan execution converted (no fallback),
#   captured ones included; twin plans finalized and cuBLASLt heuristic
#   queries bounded by the model's plans and shapes, and the same at twice
#   the steps.
# CHECK evict: --conv-layers 256 in tf32, more twin plans than a thread
#   keeps (the backward thread runs 512 plans, each with its first call's
#   twin beside): every plan execution converted, every convolution layer
#   within the bound, the calls counted, and still two twin plans
#   finalized per plan, none again: the twins evicted are the least
#   recently used, the first calls' (destroyed once an event after their
#   last execution has completed).
# CHECK auto_accuracy: at the program's default size (33 steps, 3
#   replays), where auto finds converting faster than FP32 (some (site,
#   shape) chosen), the auto policy keeps every layer within the bound,
#   the ill-conditioned one included.
# CHECK depth: the device 1 and 500 operations behind the host
#   (AMPSHIM_EMU_BEHIND) give the same conversions: under the auto policy
#   (36 steps, where auto decides nearly every (site, shape): FP32 at this
#   size, where no candidate gains 1 %) the GEMMs and convolutions that
#   ran converted (shadow calls apart), every (site, shape)'s auto state
#   and choice, some decided, and no candidate's call counted untimed;
#   under AMPSHIM_MODE=fp16 every call converted at both depths, no fallback
#   (no convolution short of a slot for its non-finite check: busy).
# CHECK noise: three runs under the auto policy (36 steps, where auto
#   decides nearly every (site, shape); at this size tf32 takes FP32's
#   time, but for noise) with timing noise on (AMPSHIM_EMU_NOISE, a seed
#   each): every (site, shape)'s auto state and choice the same in the
#   three reports, most of them decided.
# usage: test_framework.sh CHECK FRAMEWORK LIBAMPSHIM EMU_DIR PYTHON3 SCHEMA
set -euo pipefail

check=$1 prog=$(realpath "$2") lib=$(realpath "$3") emu=$(realpath "$4")
python=$5 schema=$(realpath "$6")
tmp=$(mktemp -d /tmp/ampshim-framework-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"
args=(--small)
behind=64
# The timing noise of CHECK noise: each modelled time within 0.1 %,
# enough for one timed call to find either of two equal times the faster,
# within what auto takes for no gain (1 %). A span holds a small call
# (1.2 us), an event record (2.3 us, each within the noise) and less the
# shim's measured record cost: at most about 1 % between two equal calls'
# spans; at 0.4 % a lucky three samples of a small call made a gain.
noise=0.001

fail() {
    echo "framework test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
    done
    exit 1
}

# run WHAT WANT_RC [ENV...]: the program under the shim with ENV, its
# report in run.json; it must exit WANT_RC (any: its status in $status).
run() {
    local what=$1 want=$2 rc=0 start
    shift 2
    rm -f run.json
    start=$SECONDS
    env "$@" AMPSHIM_EMU_BEHIND=$behind AMPSHIM_REPORT="$tmp/run.json" \
        LD_PRELOAD="$preload$lib" "$prog" "${args[@]}" \
        >run.out 2>run.err || rc=$?
    status=$rc
    [[ $want == any || $rc == "$want" ]] ||
        fail "$what: exit status $rc, not $want"
    echo "$what: exit $rc in $((SECONDS - start)) s;" \
         "$(grep '^framework:' run.out)"
}

# The program's count of its calls of one kind: gemm, lt or conv.
issued() {
    grep -o "^calls: .*" run.out | grep -o " $1=[0-9]*" | cut -d= -f2
}

# The exit summary line's field for an API.
field() {
    grep -o "summary $1 .*" run.err | grep -o " $2=[0-9]*" | cut -d= -f2
}

# The report's apis[] counter for an API.
report_field() {
    "$python" - run.json "$1" "$2" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(sum(a[sys.argv[3]] for a in r["apis"] if a["api"] == sys.argv[2]))
EOF
}

# Every API's calls as the program issued them, in the summary and the
# report; the report conforms to the schema.
check_counts() {
    local what=$1 api kind n
    "$python" "$schema" run.json >schema.out || fail "$what: report schema"
    for api in cublasSgemm_v2:gemm cublasLtMatmul:lt \
               cudnnBackendExecute:conv; do
        kind=${api#*:} api=${api%:*}
        n=$(issued "$kind")
        [[ -n $n && $n -gt 0 ]] || fail "$what: no $kind calls issued"
        [[ $(field "$api" calls) == "$n" ]] ||
            fail "$what: summary $api calls=$(field "$api" calls), not $n"
        [[ $(report_field "$api" calls) == "$n" ]] ||
            fail "$what: report $api calls=$(report_field "$api" calls)"
        echo "  $api calls=$n converted=$(field "$api" converted)" \
             "fp32=$(field "$api" fp32) fallback=$(field "$api" fallback)"
    done
}

# All of API's calls converted.
all_converted() {
    [[ $(field "$2" converted) == "$(field "$2" calls)" ]] ||
        fail "$1: $2 converted $(field "$2" converted) of $(field "$2" calls)"
}

# The framework line's field: plans, graphs.
program_field() {
    grep -o '^framework: .*' run.out | grep -o " $1=[0-9]*" | cut -d= -f2
}

# A forced mode's vendor host work, bounded by the model, not its calls.
# Twin plans finalized, one per distinct plan the shim runs: in tf32 two
# per plan of the program (a plan per convolution layer and direction,
# each direction run by one thread and its own), one for its first call
# (FP32's baseline, the tf32 result measured beside it into the shim's own
# output tensor) and one for the later calls, which write the program's
# output; in fp16 one per distinct shape of the shim's own tensors, so at
# most one per plan of the program (layers whose channels round up to the
# same padded count share theirs). cuBLASLt's heuristics asked at most
# three times per key, a Linear shape (in, out) at one sequence length (a
# graph per length): cuBLASLt's verdict on the call as the program makes
# it, the algorithm of the shim's step into the program's output and that
# of the first call's step into its own.
check_caches() {
    local what=$1 plans shapes
    plans=$(program_field plans)
    built=$(report_field cudnnBackendExecute plans_built)
    [[ -n $plans && $plans -gt 0 && $built -gt 0 ]] ||
        fail "$what: $built twin plans finalized for $plans"
    if [[ $what == tf32 ]]; then
        [[ $built == $((2 * plans)) ]] ||
            fail "$what: $built twin plans finalized, not 2 x $plans"
    else
        ((built <= plans)) ||
            fail "$what: $built twin plans finalized for $plans"
    fi
    shapes=$(grep '^layer linear' run.out | grep -o ' in=[0-9]* out=[0-9]*' |
             sort -u | wc -l)
    keys=$((shapes * $(program_field graphs)))
    queries=$(report_field cublasLtMatmul heuristic_queries)
    calls=$(report_field cublasLtMatmul calls)
    echo "  twin plans finalized=$built (program plans=$plans);" \
         "cuBLASLt heuristic queries=$queries for $keys keys, $calls calls"
    ((keys > 0 && queries > 0 && queries <= 3 * keys)) ||
        fail "$what: $queries cuBLASLt heuristic queries for $keys keys"
}

# The report's graph replays, from the program's own counts: its launches
# (replays=N) are the report's graph launches, and each launch replays one
# step's calls of each API (a step issues calls/(steps + graphs) of them,
# the captured steps included); "API calls converted provisional" per API
# into replays.txt. WANT: "all" (every GEMM and cuBLASLt replay converted,
# none provisional, as under a forced mode) or "any".
check_replays() {
    local what=$1 want=$2 api kind n per calls converted provisional
    "$python" - run.json >replays.txt <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("launches %d" % r["totals"]["graph_launches"])
for api in ("cublasSgemm_v2", "cublasLtMatmul", "cudnnBackendExecute"):
    n = [sum(s["replays"][k] for s in r["sites"] if s["api"] == api)
         for k in ("calls", "converted", "provisional")]
    print(api, *n)
t = r["totals"]["replays"]
print("totals", t["calls"], t["converted"], t["provisional"], t["saved_ms"])
EOF
    echo "  replays: $(tr '\n' ' ' <replays.txt)"
    [[ $(sed -n 's/^launches //p' replays.txt) == "$(program_field replays)" ]] ||
        fail "$what: report's graph launches not the program's replays"
    for api in cublasSgemm_v2:gemm cublasLtMatmul:lt \
               cudnnBackendExecute:conv; do
        kind=${api#*:} api=${api%:*}
        n=$(issued "$kind")
        per=$((n / ($(program_field steps) + $(program_field graphs))))
        read -r _ calls converted provisional < <(grep "^$api " replays.txt)
        [[ $calls == $((per * $(program_field replays))) ]] ||
            fail "$what: $api replayed $calls calls, not" \
                 "$(program_field replays) x $per"
        if [[ $want == all && $api != cudnnBackendExecute ]]; then
            [[ $converted == "$calls" && $provisional == 0 ]] ||
                fail "$what: $api replays $converted converted," \
                     "$provisional provisional of $calls"
        fi
    done
}

# A forced mode: the ill-conditioned layer's forward product alone over
# the bound.
only_ill_fails() {
    local fails
    fails=$(grep ' FAIL$' run.out | cut -d' ' -f2 | tr '\n' ' ')
    [[ $fails == "gemm11 " ]] || fail "$1: layers over the bound: '$fails'"
    grep '^layer gemm11 ' run.out | grep -q ' ill=1 ' ||
        fail "$1: gemm11 is not the ill-conditioned layer"
}

# What ran converted, from the report: "gemm=N conv=N" (converted calls,
# shadow calls apart, per family), then per auto (site, shape) its state
# and choice, one line each; the untimed auto calls and the fallbacks by
# reason on the last lines.
conversions() {
    "$python" - run.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
converted = {"gemm": 0, "conv": 0}
autos, untimed = [], 0
for s in r["sites"]:
    for sh in s["shapes"]:
        converted[s["family"]] += sh["converted"] - sh["modes"].get("shadow", 0)
        a = sh.get("auto")
        if a:
            autos.append("%s %s %s: %s %s" % (s["api"], s["function"],
                                             sh["shape"], a["state"],
                                             a["choice"]))
            untimed += sum(c["untimed_calls"] for c in a["candidates"])
print("gemm=%d conv=%d" % (converted["gemm"], converted["conv"]))
print("\n".join(sorted(autos)))
print("untimed=%d" % untimed)
print("fallbacks=%s" % json.dumps(r["totals"]["fp32_reasons"], sort_keys=True))
EOF
}

cat >auto.policy <<'EOF'
set tolerance 5e-3
rule auto when gemm
rule auto when conv
default fp32
EOF

case $check in
framework)
    rc=0
    start=$SECONDS
    AMPSHIM_EMU_BEHIND=64 "$prog" "${args[@]}" >run.out 2>run.err || rc=$?
    [[ $rc == 0 ]] || fail "bare: exit status $rc"
    grep -q '^framework: .* failed=0 ' run.out || fail "bare: summary line"
    echo "bare: exit 0 in $((SECONDS - start)) s;" \
         "$(grep '^framework:' run.out)"
    for mode in tf32 fp16; do
        run "$mode" 1 AMPSHIM_MODE=$mode
        check_counts "$mode"
        all_converted "$mode" cublasSgemm_v2
        all_converted "$mode" cublasLtMatmul
        [[ $mode == fp16 ]] && all_converted "$mode" cudnnBackendExecute
        [[ $(field cudnnBackendExecute converted) -gt 0 ]] ||
            fail "$mode: no plan execution converted"
        only_ill_fails "$mode"
        check_caches "$mode"
        check_replays "$mode" all
    done
    run auto 0 AMPSHIM_POLICY="$tmp/auto.policy"
    check_counts auto
    # At 4 steps auto still measures when the steps are captured: those
    # decisions are replayed as captured, and said so.
    check_replays auto any
    [[ $(grep '^totals ' replays.txt | cut -d' ' -f4) -gt 0 ]] ||
        fail "auto: no replay counted provisional"
    grep -q '^framework: .* failed=0 ' run.out || fail "auto: summary line"
    ;;
tf32_plans)
    run tf32 1 AMPSHIM_MODE=tf32
    check_counts tf32
    all_converted tf32 cudnnBackendExecute
    check_caches tf32
    # Twice the steps, twice the calls: the same plans and queries.
    first="$built $queries $calls"
    args+=(--steps 8)
    run tf32 1 AMPSHIM_MODE=tf32
    all_converted tf32 cudnnBackendExecute
    check_caches tf32
    [[ $calls -gt ${first##* } ]] || fail "tf32: no more calls at 8 steps"
    [[ "$built $queries" == "${first% *}" ]] ||
        fail "tf32: plans and queries $built $queries at 8 steps," \
             "${first% *} at the default"
    ;;
evict)
    args+=(--conv-layers 256)
    run tf32 1 AMPSHIM_MODE=tf32
    check_counts tf32
    all_converted tf32 cudnnBackendExecute
    only_ill_fails tf32
    plans=$(program_field plans)
    built=$(report_field cudnnBackendExecute plans_built)
    echo "  twin plans finalized=$built (program plans=$plans)"
    [[ $plans -gt 512 && $built == $((2 * plans)) ]] ||
        fail "evict: $built twin plans finalized, not 2 x $plans"
    ;;
auto_accuracy)
    # The calls counted first: only the layers' check is expected to fail.
    # 33 steps: 11 calls of each shape, enough for auto to choose.
    args=(--steps 33 --replays 3)
    run auto any AMPSHIM_POLICY="$tmp/auto.policy"
    check_counts auto
    conversions >auto.txt
    echo "  $(head -n 1 auto.txt); $(grep -c ': chosen ' auto.txt) chosen"
    grep -q ': chosen ' auto.txt || fail "auto: no (site, shape) chosen"
    grep ' FAIL$' run.out || true
    [[ $status == 0 ]] || fail "auto: exit status $status, not 0"
    grep -q '^framework: .* failed=0 ' run.out || fail "auto: summary line"
    ;;
noise)
    args=(--small --steps 36)
    for seed in 1 2 3; do
        run "auto noise seed $seed" 0 AMPSHIM_POLICY="$tmp/auto.policy" \
            AMPSHIM_EMU_NOISE="$noise:$seed"
        check_counts "auto noise seed $seed"
        conversions | sed '1d;$d' | sed '$d' >"noise-$seed.txt"
        echo "  $(grep -c ': chosen ' "noise-$seed.txt") (site, shape)s" \
             "chosen, $(grep -c ': fp32 ' "noise-$seed.txt") fp32," \
             "$(grep -c ': measuring ' "noise-$seed.txt") measuring"
        (($(grep -c ': measuring ' "noise-$seed.txt") * 4 <
          $(wc -l <"noise-$seed.txt"))) ||
            fail "noise seed $seed: a quarter or more still measuring"
    done
    for seed in 2 3; do
        diff "noise-1.txt" "noise-$seed.txt" >&2 ||
            fail "noise: auto's choices at seeds 1 and $seed differ (above)"
    done
    ;;
depth)
    for setting in auto fp16; do
        if [[ $setting == auto ]]; then
            args=(--small --steps 36) want=0
            set -- AMPSHIM_POLICY="$tmp/auto.policy"
        else
            args=(--small) want=1
            set -- AMPSHIM_MODE=fp16
        fi
        for behind in 1 500; do
            run "$setting depth $behind" $want "$@"
            check_counts "$setting depth $behind"
            conversions >"$setting-$behind.txt"
            echo "  $(head -n 1 "$setting-$behind.txt")" \
                 "$(tail -n 2 "$setting-$behind.txt" | tr '\n' ' ')"
            grep -qx 'untimed=0' "$setting-$behind.txt" ||
                fail "$setting depth $behind: auto calls counted untimed"
            if [[ $setting == fp16 ]]; then
                only_ill_fails "fp16 depth $behind"
                all_converted "fp16 depth $behind" cublasSgemm_v2
                all_converted "fp16 depth $behind" cublasLtMatmul
                all_converted "fp16 depth $behind" cudnnBackendExecute
                grep -qx 'fallbacks={}' "$setting-$behind.txt" ||
                    fail "fp16 depth $behind: $(tail -n 1 \
                         "$setting-$behind.txt")"
            fi
        done
        if [[ $setting == auto ]]; then
            grep -Eq ': (chosen|fp32) ' "$setting-1.txt" ||
                fail "auto: nothing decided"
        else
            [[ $(head -n 1 "$setting-1.txt") != "gemm=0 conv=0" ]] ||
                fail "$setting: nothing converted"
        fi
        # Under auto the calls kept FP32 (fallbacks' "auto") are not
        # compared: a deeper queue brings results later, so that a shape
        # may run one more shadow call before it decides.
        [[ $setting == fp16 ]] || sed -i '$d' "$setting-1.txt" \
                                              "$setting-500.txt"
        diff "$setting-1.txt" "$setting-500.txt" >&2 ||
            fail "$setting: depths 1 and 500 differ (above)"
    done
    ;;
*)
    fail "unknown check $check"
    ;;
esac
echo "framework test $check: passed"
