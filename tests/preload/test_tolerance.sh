#!/usr/bin/env bash
# A tolerance the user states once, in the norm the program checks in.
# examples/matmul_check checks its product as NVIDIA's matrixMulCUBLAS
# sample does (relative Frobenius error < 1e-6 against a double reference)
# and prints PASS or FAIL:
# - without the shim it passes; under a policy of fp16 (tolerance 5e-3 in
#   the max norm) it fails, and the exit line says how far the
#   converted results differ from FP32 in the tolerance's norm, the
#   tolerance, where it came from and how to tighten it (the numbers those
#   of the report);
# - under the built-in policy (auto), over the sample's 30 iterations: the
#   fastest candidate within 5e-3 converts and the check fails, the exit
#   line giving that candidate's error; with AMPSHIM_TOLERANCE=1e-6:fro
#   every 16-bit candidate is over it, fp16x3 and tf32x3 are measured,
#   both within it, the faster (tf32x3, its median gain over FP32 the
#   greater) is chosen, and the check passes;
#   on the B200 model bf16x9 (cuBLAS's BF16x9 emulation) is measured
#   too and chosen, the fastest of the three; AMPSHIM_MODE=bf16x9 runs
#   there, and on the H100 model stays FP32 counted as no-emulation;
# - ampshim run --tolerance 1e-6:fro on a 1024^3 product: fp16x3 chosen,
#   its steady state at least 1.5x FP32's, and the check passes;
# - AMPSHIM_TOLERANCE=1e-6:fro, ampshim run --tolerance 1e-6:fro, a
#   policy's `set tolerance 1e-6 fro`, and AMPSHIM_TOLERANCE under
#   AMPSHIM_MODE: the site is demoted after its shadow calls and the check
#   passes; AMPSHIM_TOLERANCE overrides the policy's tolerance;
# - a bad AMPSHIM_TOLERANCE, --tolerance or `set tolerance X NORM`: one
#   clear message (the policy's as FILE:LINE:COL);
# - AMPSHIM_QUIET: not a byte on stderr;
# - ampshim calibrate --tolerance 1e-6:fro chooses in that norm and writes
#   `set tolerance 1e-06 fro`.
# usage: test_tolerance.sh MATMUL_CHECK LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#        CHECK_SCHEMA
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6")
tmp=$(mktemp -d /tmp/ampshim-tolerance-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }$lib"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export XDG_STATE_HOME=$tmp/state LD_LIBRARY_PATH=$emu
cd "$tmp"
# A rule of one mode with its verify calls: the demotion by the tolerance.
printf 'set tolerance 5e-3\nrule fp16 verify 2 when gemm\ndefault fp32\n' \
    >fp16.policy

fail() {
    echo "tolerance test: $*" >&2
    for f in "$tmp"/run.out "$tmp"/run.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# run WANT_STATUS [VAR=VALUE...]: matmul_check under the shim (with
# --iterations $iterations when set), its report in run.json, stdout and
# stderr in run.out and run.err.
run() {
    local want=$1 rc=0
    shift
    rm -f run.json
    env "$@" LD_PRELOAD="$preload" AMPSHIM_REPORT=run.json "$prog" \
        ${iterations:+--iterations "$iterations"} \
        >run.out 2>run.err || rc=$?
    [[ $rc == "$want" ]] || fail "$*: status $rc, expected $want"
}

# has LINE: run.err has LINE exactly, after its "ampshim[PID]: ".
has() {
    sed -E 's/^ampshim\[[0-9]+\]: //' run.err | grep -Fxq -- "$1"
}

# A key of the report: json KEY (a Python expression on r).
json() {
    "$python" -c 'import json, sys
r = json.load(open("run.json"))
print(eval(sys.argv[1]))' "$1"
}

pass='^Comparing CUBLAS Matrix Multiply with CPU results: relative L2 error [0-9.e+-]+, bound 1e-06: PASS$'
fail_line='^Comparing CUBLAS Matrix Multiply with CPU results: relative L2 error [0-9.e+-]+, bound 1e-06: FAIL$'
how='tighten it with AMPSHIM_TOLERANCE=X[:fro] or ampshim run --tolerance X[:fro] (1e-6:fro is FP32 accuracy)'

# ---- Without the shim: FP32 meets the sample's bound ---------------------------
"$prog" >run.out 2>run.err || fail "without the shim: status $?"
grep -Eq "$pass" run.out || fail "without the shim: no PASS"

# ---- fp16 within 5e-3 (max norm); the check fails -------------------------
run 1 AMPSHIM_POLICY=fp16.policy
grep -Eq "$fail_line" run.out || fail "fp16 policy: no FAIL"
"$python" "$schema" run.json || fail "fp16 policy: report schema"
[[ $(json 'r["policy"]["tolerance"], r["policy"]["tolerance_norm"], r["policy"]["tolerance_source"]') == \
   "(0.005, 'max', 'policy fp16.policy')" ]] || fail "fp16 policy: the report's tolerance"
[[ $(json 'r["sites"][0]["errors"]["shadow_calls"]') == 2 ]] ||
    fail "fp16 policy: shadow calls"
max=$(json '"%.2e" % r["sites"][0]["errors"]["max_rel"]')
fro=$(json '"%.2e" % r["sites"][0]["errors"]["max_fro"]')
# FP16 products of [0, 1) operands: about 1e-5 in the L2 norm, over the
# sample's bound, and below the max norm's error.
"$python" -c "import sys; sys.exit(not (1e-6 < $fro < $max < 5e-3))" ||
    fail "fp16 policy: errors max $max, fro $fro"
[[ $(grep -c 'converted results' run.err) == 1 ]] ||
    fail "fp16 policy: not one exit line on the error"
has "converted results differ from FP32 by up to $max (relative, max norm; $fro in the Frobenius norm; the largest of 2 shadow calls), within the tolerance 0.005 (max norm, policy fp16.policy); $how" ||
    fail "fp16 policy: the exit line"

# ---- AMPSHIM_TOLERANCE=1e-6:fro: demoted after the shadow calls; passes ------
run 0 AMPSHIM_TOLERANCE=1e-6:fro AMPSHIM_POLICY=fp16.policy
grep -Eq "$pass" run.out || fail "1e-6:fro: no PASS"
"$python" "$schema" run.json || fail "1e-6:fro: report schema"
sed -E 's/\+0x[0-9a-f]+\)/+OFFSET)/' run.err >run.err.sites
grep -Eq "^ampshim\[[0-9]+\]: demoted cublasSgemm_v2 at main \(matmul_check\+OFFSET\): shadow fro_rel_err=$("$python" -c "print('%.3g' % $fro)") exceeds AMPSHIM_TOLERANCE's tolerance 1e-06 \(Frobenius norm\)$" run.err.sites ||
    fail "1e-6:fro: the demotion line"
# Nothing converted reached the program: no line on converted results.
! grep -q 'converted results' run.err || fail "1e-6:fro: an error line"
[[ $(json 'r["sites"][0]["demoted"], r["sites"][0]["errors"]["tolerance"], r["sites"][0]["errors"]["tolerance_norm"], r["policy"]["tolerance_source"]') == \
   "(True, 1e-06, 'fro', 'AMPSHIM_TOLERANCE')" ]] || fail "1e-6:fro: the report"
[[ $(json 'r["sites"][0]["errors"]["over_tolerance"] >= 1') == True ]] ||
    fail "1e-6:fro: over_tolerance"

# The aliases: the same run.
run 0 AMPSHIM_TOLERANCE=1e-6:L2 AMPSHIM_POLICY=fp16.policy
grep -Eq "$pass" run.out || fail "1e-6:L2: no PASS"
[[ $(json 'r["policy"]["tolerance_norm"]') == fro ]] || fail "1e-6:L2: norm"

# A Frobenius tolerance the fp16 product meets: converted, and the exit
# line in that norm.
run 1 AMPSHIM_TOLERANCE=1e-3:fro AMPSHIM_POLICY=fp16.policy
has "converted results differ from FP32 by up to $fro (relative, Frobenius norm; the largest of 2 shadow calls), within the tolerance 0.001 (Frobenius norm, AMPSHIM_TOLERANCE); $how" ||
    fail "1e-3:fro: the exit line"
# The exit table's error column in that norm too.
grep -Eq '^ampshim\[[0-9]+\]: \| site .* saved ms +fro rel err$' run.err ||
    fail "1e-3:fro: the table's header"
grep -Eq "^ampshim\[[0-9]+\]: \| total .* $fro$" run.err ||
    fail "1e-3:fro: the table's error"

# ---- The built-in policy (auto), 30 iterations as the sample runs ------------
# auto measures fp16, bf16 and tf32 in shadow on the first calls, then
# the fastest within 5e-3 converts: its product fails the check, and the
# exit line gives that candidate's error (not the others').
iterations=30
run 1
grep -Eq "$fail_line" run.out || fail "auto: no FAIL"
"$python" "$schema" run.json || fail "auto: report schema"
choice=$(json 'r["sites"][0]["shapes"][0]["auto"]["choice"]')
[[ $choice == tf32 || $choice == fp16 || $choice == bf16 ]] ||
    fail "auto: chose $choice"
chosen='[c for c in r["sites"][0]["shapes"][0]["auto"]["candidates"] if c["mode"] == r["sites"][0]["shapes"][0]["auto"]["choice"]][0]'
amax=$(json "'%.2e' % $chosen[\"max_rel\"]")
afro=$(json "'%.2e' % $chosen[\"fro_rel\"]")
an=$(json "$chosen[\"errors_measured\"]")
of="the largest of $an shadow calls"
[[ $an != 1 ]] || of="measured in 1 shadow call"
has "converted results differ from FP32 by up to $amax (relative, max norm; $afro in the Frobenius norm; $of), within the tolerance 0.005 (max norm, the built-in policy); $how" ||
    fail "auto: the exit line"
# With FP32 accuracy in the Frobenius norm: every 16-bit candidate is over
# it, fp16x3 and tf32x3 are measured, and the check passes (the faster
# split where it is faster than FP32, else FP32: on this size on the H100
# model tf32x3, about 1.2x).
run 0 AMPSHIM_TOLERANCE=1e-6:fro
grep -Eq "$pass" run.out || fail "auto 1e-6:fro: no PASS"
[[ $(json '[(c["mode"], c["eligible"]) for c in r["sites"][0]["shapes"][0]["auto"]["candidates"]][:3]') == \
   "[('fp16', False), ('bf16', False), ('tf32', False)]" ]] ||
    fail "auto 1e-6:fro: a 16-bit candidate within 1e-6"
[[ $(json 'r["sites"][0]["shapes"][0]["auto"]["candidates"][3]["mode"], r["sites"][0]["shapes"][0]["auto"]["candidates"][3]["fro_rel"] < 1e-6') == \
   "('fp16x3', True)" ]] || fail "auto 1e-6:fro: fp16x3 not measured within"
[[ $(json 'r["sites"][0]["shapes"][0]["auto"]["candidates"][4]["mode"], r["sites"][0]["shapes"][0]["auto"]["candidates"][4]["fro_rel"] < 1e-6') == \
   "('tf32x3', True)" ]] || fail "auto 1e-6:fro: tf32x3 not measured within"
[[ $(json 'r["sites"][0]["shapes"][0]["auto"]["choice"]') == tf32x3 ]] ||
    fail "auto 1e-6:fro: not the faster split, tf32x3"
[[ $(json '[c["median_speedup"] for c in r["sites"][0]["shapes"][0]["auto"]["candidates"][3:5]] == sorted(c["median_speedup"] for c in r["sites"][0]["shapes"][0]["auto"]["candidates"][3:5])') == True ]] ||
    fail "auto 1e-6:fro: tf32x3 chosen but not the faster split"
# No bf16x9 on the H100: cuBLAS would compute FP32 under its name.
[[ $(json 'len(r["sites"][0]["shapes"][0]["auto"]["candidates"])') == 5 ]] ||
    fail "auto 1e-6:fro: a bf16x9 candidate on the H100 model"
grep -q "error [0-9.e+-]* over the tolerance 1e-06 (Frobenius norm)" <("$tool" report run.json) ||
    fail "auto 1e-6:fro: ampshim report's reasons"

# ---- On the B200 model: cuBLAS's BF16x9 emulation, auto's candidate ----------
# The GPU has it (compute capability 10.0): with FP32 accuracy asked for,
# bf16x9 is measured after the splits, within 1e-6 and the fastest of
# them (no copies of the operands), so it is chosen and the check passes.
run 0 AMPSHIM_TOLERANCE=1e-6:fro AMPSHIM_EMU_GPU=b200
grep -Eq "$pass" run.out || fail "b200 auto 1e-6:fro: no PASS"
"$python" "$schema" run.json || fail "b200 auto 1e-6:fro: report schema"
bf16x9='[c for c in r["sites"][0]["shapes"][0]["auto"]["candidates"] if c["mode"] == "bf16x9"][0]'
[[ $(json "$bf16x9[\"eligible\"], $bf16x9[\"fro_rel\"] < 1e-6, $bf16x9[\"median_speedup\"] > 1.5") == \
   "(True, True, True)" ]] || fail "b200 auto 1e-6:fro: bf16x9 not measured within and faster"
[[ $(json 'r["sites"][0]["shapes"][0]["auto"]["choice"], r["sites"][0]["modes"].get("bf16x9", 0) > 0') == \
   "('bf16x9', True)" ]] || fail "b200 auto 1e-6:fro: bf16x9 not chosen and run"
unset iterations

# ---- AMPSHIM_MODE=bf16x9: the B200 runs it; the H100 keeps FP32 and says why -
run 0 AMPSHIM_MODE=bf16x9 AMPSHIM_TOLERANCE=1e-6:fro AMPSHIM_EMU_GPU=b200
grep -Eq "$pass" run.out || fail "b200 bf16x9: no PASS"
[[ $(json 'r["sites"][0]["modes"].get("bf16x9", 0) == r["sites"][0]["calls"] > 0, r["sites"][0]["errors"]["max_fro"] < 1e-6') == \
   "(True, True)" ]] || fail "b200 bf16x9: not every call in bf16x9 within 1e-6"
run 0 AMPSHIM_MODE=bf16x9
grep -Eq "$pass" run.out || fail "h100 bf16x9: no PASS"
"$python" "$schema" run.json || fail "h100 bf16x9: report schema"
[[ $(json 'r["sites"][0]["modes"], r["sites"][0]["fp32_reasons"] == {"no-emulation": r["sites"][0]["calls"]}') == \
   "({}, True)" ]] || fail "h100 bf16x9: not kept FP32 as no-emulation"
[[ $(grep -c "bf16x9 needs cuBLAS's BF16x9 emulation, which only GPUs of compute capability 10.0 and 10.3 have (NVIDIA H100 SXM (emulated) is 9.0): such calls stay FP32" run.err) == 1 ]] ||
    fail "h100 bf16x9: not said once why"

# ---- Under AMPSHIM_MODE: AMPSHIM_TOLERANCE holds too -------------------------
run 1 AMPSHIM_MODE=fp16
has "converted results differ from FP32 by up to $max (relative, max norm; $fro in the Frobenius norm; measured in 1 shadow call), no tolerance bounds them (AMPSHIM_MODE); bound them with AMPSHIM_TOLERANCE=X[:fro] or ampshim run --tolerance X[:fro] (1e-6:fro is FP32 accuracy)" ||
    fail "AMPSHIM_MODE: no line saying nothing bounds the error"
[[ $(json 'r["policy"]["tolerance"]') == None ]] || fail "AMPSHIM_MODE: a tolerance"
run 0 AMPSHIM_MODE=fp16 AMPSHIM_TOLERANCE=1e-6:fro
grep -Eq "$pass" run.out || fail "AMPSHIM_MODE with AMPSHIM_TOLERANCE: no PASS"
grep -q "demoted cublasSgemm_v2 at main" run.err ||
    fail "AMPSHIM_MODE with AMPSHIM_TOLERANCE: not demoted"
# tf32x3 is FP32-accurate: within 1e-6:fro, never demoted, every call
# converted in it, and the check passes.
run 0 AMPSHIM_MODE=tf32x3 AMPSHIM_TOLERANCE=1e-6:fro
grep -Eq "$pass" run.out || fail "AMPSHIM_MODE=tf32x3: no PASS"
! grep -q "demoted" run.err || fail "AMPSHIM_MODE=tf32x3: demoted"
"$python" "$schema" run.json || fail "AMPSHIM_MODE=tf32x3: report schema"
[[ $(json 'r["sites"][0]["modes"].get("tf32x3", 0) == r["sites"][0]["calls"] > 0, r["sites"][0]["errors"]["max_fro"] < 1e-6') == \
   "(True, True)" ]] || fail "AMPSHIM_MODE=tf32x3: not every call in tf32x3 within 1e-6"

# ---- A policy's `set tolerance X NORM`; AMPSHIM_TOLERANCE overrides it -------
printf 'set tolerance 1e-6 fro\nrule fp16 verify 2 when gemm\ndefault fp32\n' \
    >fro.policy
run 0 AMPSHIM_POLICY=fro.policy
grep -Eq "$pass" run.out || fail "policy 1e-6 fro: no PASS"
grep -q "exceeds the policy's tolerance 1e-06 (Frobenius norm)" run.err ||
    fail "policy 1e-6 fro: the demotion's reason"
run 1 AMPSHIM_POLICY=fro.policy AMPSHIM_TOLERANCE=0.5
grep -Eq "$fail_line" run.out || fail "AMPSHIM_TOLERANCE over the policy: no FAIL"
grep -q "within the tolerance 0.5 (max norm, AMPSHIM_TOLERANCE); " run.err ||
    fail "AMPSHIM_TOLERANCE over the policy: the exit line"

# ---- Bad values --------------------------------------------------------------
run 1 AMPSHIM_TOLERANCE=1e-3:l3 AMPSHIM_POLICY=fp16.policy
has 'warning: AMPSHIM_TOLERANCE="1e-3:l3" is not a tolerance (a non-negative number, with :NORM for a norm, NORM max or fro, as 1e-6:fro); ignored' ||
    fail "bad AMPSHIM_TOLERANCE: the warning"
grep -q "within the tolerance 0.005 (max norm, policy fp16.policy)" run.err ||
    fail "bad AMPSHIM_TOLERANCE: not the policy's tolerance"

printf 'set tolerance 1e-3 l3\ndefault fp16\n' >bad.policy
rc=0
"$tool" run --report off --policy bad.policy -- "$prog" >run.out 2>run.err ||
    rc=$?
[[ $rc == 125 ]] || fail "bad norm in a policy: status $rc"
grep -qx "ampshim run: bad.policy:1:20: expected a norm (max or fro) or end of line after the tolerance, found 'l3'" run.err ||
    fail "bad norm in a policy: the message"

rc=0
"$tool" run --report off --tolerance 1e-6:fr -- "$prog" >run.out 2>run.err ||
    rc=$?
[[ $rc == 125 ]] || fail "bad --tolerance: status $rc"
grep -qx "ampshim run: --tolerance 1e-6:fr: not a tolerance; expected a non-negative number with an optional :NORM, NORM max or fro (1e-6:fro)" run.err ||
    fail "bad --tolerance: the message"
[[ ! -s run.out ]] || fail "bad --tolerance: the program ran"

# ---- ampshim run --tolerance -------------------------------------------------
# A 1024^3 product checked to 1e-6 under the built-in policy on the H100
# model: auto measures both splits within the tolerance and keeps the
# faster (fp16x3 at this size: its copies are half as wide as tf32x3's),
# whose steady state is at least 1.5x FP32's time, and the check passes.
rc=0
rm -f run.json
env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" "$tool" run --report run.json \
    --tolerance 1e-6:fro -- "$prog" --shape 1024x1024x1024 \
    --iterations 30 >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "run --tolerance 1e-6:fro: status $rc"
grep -Eq "$pass" run.out || fail "run --tolerance 1e-6:fro: no PASS"
[[ $(json 'r["sites"][0]["shapes"][0]["auto"]["choice"], r["totals"]["steady_speedup"] >= 1.5, [c["fro_rel"] < 1e-6 for c in r["sites"][0]["shapes"][0]["auto"]["candidates"] if c["mode"] == "fp16x3"]') == \
   "('fp16x3', True, [True])" ]] ||
    fail "run --tolerance 1e-6:fro at 1024^3: not fp16x3 at 1.5x or more within 1e-6"
[[ $(json 'r["policy"]["tolerance_source"]') == AMPSHIM_TOLERANCE ]] ||
    fail "run --tolerance: the report's source"
"$tool" report run.json >report.out || fail "report: status"
grep -qx 'tolerance: 1e-06 (Frobenius norm), AMPSHIM_TOLERANCE' report.out ||
    fail "report: the tolerance line"
grep -q '^site / shape .* fro rel tolerance$' report.out ||
    fail "report: the error column in the Frobenius norm"

# ---- AMPSHIM_QUIET: nothing on stderr ----------------------------------------
run 1 AMPSHIM_QUIET=1 AMPSHIM_POLICY=fp16.policy
[[ ! -s run.err ]] || fail "AMPSHIM_QUIET: stderr written"

# ---- calibrate in the Frobenius norm -----------------------------------------
rc=0
env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" "$tool" calibrate -o cal.policy \
    --modes fp16,fp16x3 --tolerance 1e-6:fro \
    -- "$prog" >run.out 2>run.err || rc=$?
[[ $rc == 0 ]] || fail "calibrate: status $rc"
grep -qx 'set tolerance 1e-06 fro' cal.policy || fail "calibrate: set tolerance"
grep -Eq '^#   fp16 +rejected: max rel error [0-9.e+-]+, fro rel error [0-9.e+-]+, speedup [0-9.]+: error over the tolerance 1e-06 \(Frobenius norm\)$' cal.policy ||
    fail "calibrate: fp16 not rejected for its Frobenius error"
# fp16x3 is within 1e-6 in the Frobenius norm: not rejected for its error.
grep -E '^#   fp16x3 ' cal.policy | grep -vq 'error over the tolerance' ||
    fail "calibrate: fp16x3 rejected for its error"
rc=0
env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" "$tool" run --report off \
    --policy cal.policy -- "$prog" >run.out \
    2>run.err || rc=$?
[[ $rc == 0 ]] && grep -Eq "$pass" run.out ||
    fail "the calibrated policy: the check does not pass"

echo "tolerance test: all checks passed"
