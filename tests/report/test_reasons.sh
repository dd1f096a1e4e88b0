#!/usr/bin/env bash
# Why calls ran FP32, for calls decided before any policy, and reports of
# schema version 1:
# - gemm_suite under AMPSHIM_MODE=fp16: its invalid, pedantic and empty
#   calls are calls of their sites, with those reasons, and every site's,
#   shape's and the total's reasons add up to its FP32 and fallback calls
#   (check_schema.py);
# - gemm_suite's pedantic calls under a policy: FP32 (pedantic) unless a
#   rule names `math`, then converted in that rule's mode;
# - `ampshim report` on a version-1 report (tests/report/report-v1.json,
#   written by the shim before version 2): the table, with '-' where
#   version 2's figures are missing, and the CSV with version 2's columns;
# - a report of a later version: read, with one line saying what is not
#   shown.
# usage: test_reasons.sh GEMM_SUITE LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#                        CHECK_SCHEMA REPORT_V1
set -euo pipefail

suite=$(realpath "$1") shim=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6") v1=$(realpath "$7")
tmp=$(mktemp -d /tmp/ampshim-reasons-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "reasons test: $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
cd "$tmp"

# A sanitized build's runtime must come first in a preloaded program.
first=${AMP_TEST_PRELOAD_FIRST:-}
LD_LIBRARY_PATH=$emu LD_PRELOAD="${first:+$first }$shim" AMPSHIM_MODE=fp16 \
    AMPSHIM_REPORT=$tmp/suite.json "$suite" --tol fp16 >suite.out 2>suite.err ||
    fail "gemm_suite failed under the shim"
"$python" "$schema" suite.json >schema.out || fail "suite.json: schema"
"$python" - suite.json <<'PY' || fail "suite.json: reasons"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]["fp32_reasons"]
# gemm_suite's classes: 2 pedantic calls, 6 with nothing to compute, and
# invalid ones (the grouped call's refusal is the whole call's).
assert t.get("pedantic") == 2, t
assert t.get("empty") == 6, t
assert t.get("invalid", 0) >= 5, t
gemm = [s for s in r["sites"] if s["api"] == "cublasSgemm_v2"]
assert gemm and gemm[0]["fp32_reasons"].get("invalid", 0) >= 1, gemm
# An invalid call computes nothing.
for s in r["sites"]:
    for sh in s["shapes"]:
        if sh["fp32_reasons"].get("invalid") == sh["calls"]:
            assert sh["flops"]["total"] == 0, sh
PY

# Pedantic calls under a policy: FP32 with reason pedantic where no rule
# names `math` (the default included), converted where one does, and
# passing gemm_suite's own checks either way (no FP32 baseline call: each
# shape's one call runs in its rule's mode).
pedantic_under() {
    LD_LIBRARY_PATH=$emu LD_PRELOAD="${first:+$first }$shim" \
        AMPSHIM_POLICY=$tmp/$1.policy AMPSHIM_BASELINE=off \
        AMPSHIM_REPORT=$tmp/$1.json \
        "$suite" --tol fp16 >"$1.out" 2>"$1.err" ||
        fail "gemm_suite failed under $1.policy"
    "$python" - "$1.json" "$2" <<'PY' || fail "$1.json: pedantic calls"
import json, sys
r = json.load(open(sys.argv[1]))
want = sys.argv[2]
dims = {(30, 20, 50), (25, 23, 41)}  # sgemm_pedantic, gemmex_pedantic
shapes = [sh for s in r["sites"] for sh in s["shapes"]
          if (sh["dims"].get("m"), sh["dims"].get("n"),
              sh["dims"].get("k")) in dims]
assert len(shapes) == 2, shapes
t = r["totals"]["fp32_reasons"]
if want == "fp32":
    assert t.get("pedantic") == 2, t
    for sh in shapes:
        assert sh["fp32"] == 1 and sh["fp32_reasons"] == {"pedantic": 1}, sh
else:
    assert "pedantic" not in t, t
    for sh in shapes:
        assert sh["modes"] == {want: 1} and sh["fp32"] == 0, sh
PY
}
printf 'set min-size 0\nrule fp16 when gemm\ndefault fp16\n' >plain.policy
printf 'set min-size 0\nrule tf32x3 when math == pedantic\nrule fp16 when gemm\ndefault fp16\n' \
    >explicit.policy
pedantic_under plain fp32
pedantic_under explicit tf32x3

"$tool" report "$v1" >v1.out 2>v1.err || fail "report of version 1: status"
[[ ! -s v1.err ]] || fail "report of version 1: a message"
grep -q '^dense_layer (layer_mix+0x15e0) ' v1.out || fail "v1: no dense_layer row"
grep -q '^  1024x1024x1024 NN ' v1.out || fail "v1: no shape row"
grep -q '^site / shape .* steady ' v1.out || fail "v1: no steady column"
! grep -q 'fp32:' v1.out || fail "v1: reasons it does not have"
"$tool" report --csv - "$v1" >v1.csv 2>v1.err || fail "v1 CSV: status"
head -1 v1.csv | grep -q ',demoted,steady_speedup,fp32_reasons,fp32_unknown_reason,fro_rel_err,tolerance_norm,shadow,delivered_rel_err,delivered_fro_err$' ||
    fail "v1 CSV: header"
# Its shadow calls apart from the converted ones, from its modes; nothing
# converted reached the program: exactly FP32, an error of 0.
grep -q '^cublasSgemm_v2,tiny_projection,.*,no,,,,,,0,0,0$' v1.csv ||
    fail "v1 CSV: a site without the new figures"

sed 's/"version": 1,/"version": 9,/' "$v1" >v9.json
"$tool" report v9.json >v9.out 2>v9.err || fail "report of version 9: status"
grep -qx 'ampshim report: v9.json: schema version 9, newer than this ampshim.s 2: what it added is not shown' v9.err ||
    fail "version 9: no line saying so"
grep -q '^dense_layer (layer_mix+0x15e0) ' v9.out || fail "v9: no table"
echo "reasons test: all checks passed"
