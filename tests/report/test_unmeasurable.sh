#!/usr/bin/env bash
# A shadow check that compares no element: report_prog --nonfinite makes
# FP32 products with no finite element, so its shadow calls under
# AMPSHIM_MODE=shadow:fp16 (and the baseline call under AMPSHIM_MODE=fp16)
# measure nothing. Every output that shows the error says so, never an
# error of 0:
# - the report: errors.compared is 0, max_rel, max_fro, max_abs and the
#   means null, shadow_calls the calls made; the report follows the schema;
# - the summary line says compared=0 and no error; under fp16 (the
#   program got the candidate's result) the exit table's error cells say
#   "not measurable", and so does the exit line; under shadow:fp16 the
#   program got FP32's results: the cells say "exactly FP32" and the line
#   of the candidates measured in shadow "not measurable";
# - `ampshim report` and its page say "not measurable" (under shadow,
#   of the candidate);
# and the same runs on finite data compare every element of every call.
# usage: test_unmeasurable.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#        CHECK_SCHEMA
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6")
tmp=$(mktemp -d /tmp/ampshim-unmeasurable-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

fail() {
    echo "unmeasurable test: $*" >&2
    for f in "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
    done
    exit 1
}

# run NAME MODE [ARGS...]: report_prog (4 calls of 96 x 64 x 32) under
# AMPSHIM_MODE=MODE, its report in NAME.json, stderr in NAME.err, the
# tool's table and page.
run() {
    local name=$1 mode=$2
    shift 2
    LD_PRELOAD="$preload$lib" AMPSHIM_MODE=$mode \
        AMPSHIM_REPORT=$tmp/$name.json "$prog" --calls 4 --m 96 --n 64 \
        --k 32 "$@" >"$name.out" 2>"$name.err" ||
        fail "$name: the run under the shim failed"
    "$python" "$schema" "$name.json" >"$name-schema.out" 2>&1 ||
        fail "$name: the report does not follow the schema"
    "$tool" report "$name.json" >"$name-table.out" 2>"$name-table.err" ||
        fail "$name: ampshim report"
    "$tool" report "$name.json" --html "$name.html" >/dev/null \
        2>"$name-html.err" || fail "$name: ampshim report --html"
}

run finite shadow:fp16
run nonfinite shadow:fp16 --nonfinite
run finite-fp16 fp16
run nonfinite-fp16 fp16 --nonfinite

"$python" - <<'PY' || fail "the outputs do not say what was compared"
import json, re

bad = []

def errors(name):
    """Every errors object of the report: per site and per shape."""
    doc = json.load(open(name + ".json"))
    out = []
    for s in doc["sites"]:
        out.append((s["api"], s["errors"]))
        out += [(s["api"] + " " + sh["shape"], sh["errors"])
                for sh in s["shapes"]]
    return out

# Shadow: 4 measured calls; fp16: the shape's first call, its baseline.
for name, calls in (("", 4), ("-fp16", 1)):
    for where, e in errors("finite" + name):
        if e["shadow_calls"] != calls or e.get("compared") != calls * 96 * 64:
            bad.append(f"finite{name} {where}: {e}")
        if e["max_rel"] is None or e["max_fro"] is None:
            bad.append(f"finite{name} {where}: no error: {e}")
    for where, e in errors("nonfinite" + name):
        if e["shadow_calls"] != calls or e.get("compared") != 0:
            bad.append(f"nonfinite{name} {where}: {e}")
        for key in ("max_rel", "mean_rel", "max_abs", "max_fro", "mean_fro"):
            if e[key] is not None:
                bad.append(f"nonfinite{name} {where}: {key} {e[key]}, not "
                           "null")

def exit_lines(name):
    return [re.sub(r"^ampshim\[\d+\]: ", "", l)
            for l in open(name + ".err").read().splitlines()]

for name, cell in (("nonfinite", "exactly FP32"),
                   ("nonfinite-fp16", "not measurable")):
    lines = exit_lines(name)
    rows = [l for l in lines if l.startswith("| ") and "cublasSgemm" in l
            or l.startswith("| total")]
    if len(rows) != 2 or not all(l.endswith(cell) for l in rows):
        bad.append(f"{name}: exit table rows: {rows}")
    cands = [l for l in lines if l.startswith("|   candidates measured")]
    if name == "nonfinite" and (len(cands) != 1 or
                                "not measurable" not in cands[0]):
        bad.append(f"{name}: the candidates' line: {cands}")
    summary = [l for l in lines if l.startswith("summary cublasSgemm_v2 ")]
    if (len(summary) != 1 or not summary[0].endswith(" compared=0")
            or "max_rel_err=0" in summary[0]):
        bad.append(f"{name}: summary line: {summary}")
    if any("e+00" in l for l in lines):
        bad.append(f"{name}: an error of 0 on the exit lines")
said = [l for l in exit_lines("nonfinite-fp16")
        if l.startswith("converted results")]
if len(said) != 1 or "not measurable" not in said[0]:
    bad.append(f"fp16 exit line: {said}")
said = [l for l in exit_lines("finite-fp16")
        if l.startswith("converted results")]
if len(said) != 1 or "differ from FP32 by up to" not in said[0]:
    bad.append(f"finite fp16 exit line: {said}")
summary = [l for l in exit_lines("finite") if l.startswith("summary ")]
if len(summary) != 1 or not summary[0].endswith(f" compared={4 * 96 * 64}"):
    bad.append(f"finite: summary line: {summary}")
table = open("nonfinite-table.out").read().splitlines()
trows = [l for l in table if "cublasSgemm" in l]
if not trows or not all("exactly FP32" in l for l in trows):
    bad.append(f"ampshim report rows: {trows}")
shadow = [l for l in table if l.startswith("    shadow: ")]
if len(shadow) != 1 or "fp16 candidate, max rel err not measurable" \
        not in shadow[0]:
    bad.append(f"ampshim report: the candidate's line: {shadow}")
table = open("nonfinite-fp16-table.out").read().splitlines()
trows = [l for l in table if "cublasSgemm" in l]
if not trows or not all("not measurable" in l for l in trows):
    bad.append(f"ampshim report rows, fp16: {trows}")
if "e+00" in "\n".join(trows):
    bad.append(f"ampshim report shows an error of 0: {trows}")
page = open("nonfinite.html").read()
if "not measurable" not in page:
    bad.append("the page does not say not measurable")
finite_page = open("finite.html").read()
if "not measurable" in finite_page:
    bad.append("the finite run's page says not measurable")
for l in bad:
    print(l)
raise SystemExit(1 if bad else 0)
PY
echo "unmeasurable test: ok"
