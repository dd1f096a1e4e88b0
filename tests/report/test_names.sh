#!/usr/bin/env bash
# How call sites are named, on the emulator, with cxx_names: its GEMMs
# come from _ZN3app4stepEi.isra.0 (app::step(int)) and
# _ZN5model4PairIfiE3runEv.constprop.0 (model::Pair<float, int>::run()),
# and the program has no C++ runtime of its own (the shim loads the
# demangler). Each site's label is "FUNCTION (cxx_names+0xOFFSET)":
# - the exit table: the label on a line of its own, the site's row below;
# - the report: function demangled without the suffix, symbol the raw
#   name, the offset of the label;
# - `ampshim report`: the label line and the row below; --csv: the
#   function column; a report of an older shim (function mangled, no
#   symbol) reads the same;
# - the trace: each event's site is its label;
# - a demotion: the warning and the exit line name the label;
# - `ampshim calibrate`: its rules name the demangled callers without the
#   suffixes, quoted, and its table the labels; the program run again
#   with that policy: each site in the mode its rule chose;
# - hand-written rules: caller globs on the demangled name, on the raw
#   symbol with and without its suffix, each matching its site only.
# usage: test_names.sh CXX_NAMES LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5
tmp=$(mktemp -d /tmp/ampshim-names-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$lib
# A sanitized build's runtime must come first in a preloaded child; the
# tool keeps LD_PRELOAD in front of the shim.
first=${AMP_TEST_PRELOAD_FIRST:-}
cd "$tmp"

fail() {
    echo "names test: $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err "$tmp"/*.policy; do
        [[ -s $f ]] && { echo "--- $f" >&2; head -c 4000 "$f" >&2; }
    done
    exit 1
}

# t NAME [VAR=value...] -- ARGS...: the tool's stdout, stderr and status in
# NAME.out, NAME.err, NAME.rc.
t() {
    local name=$1
    shift
    local -a vars=()
    while [[ $1 != -- ]]; do vars+=("$1"); shift; done
    shift
    set +e
    env LD_PRELOAD="$first" "${vars[@]}" "$tool" "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    set -e
    [[ $(cat "$tmp/$name.rc") == 0 ]] ||
        fail "$name: status $(cat "$tmp/$name.rc")"
}
# count FILE TEXT: the lines of FILE that contain TEXT.
count() { grep -cF -- "$2" "$1" || true; }
# after FILE TEXT: the line after the one that is TEXT (after the shim's
# "ampshim[PID]: | " in the exit table).
after() {
    awk -v want="$2" 'found { print; exit }
        { line = $0; i = index(line, "]: | ");
          if (i) line = substr(line, i + 5);
          if (line == want) found = 1 }' "$1"
}

step="app::step(int)"
pair="model::Pair<float, int>::run()"

# ---- A run in fp16: the exit table, the report, the trace ------------------
t fp16 AMPSHIM_TRACE="$tmp/trace.json" -- \
    run --mode fp16 --report "$tmp/names.json" -- "$prog"
[[ $(count fp16.out "failed=0 c0=") == 2 ]] || fail "fp16: program output"
"$python" - "$tmp/names.json" "$step" "$pair" >offsets.txt <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
want = {sys.argv[2]: "_ZN3app4stepEi.isra.0",
        sys.argv[3]: "_ZN5model4PairIfiE3runEv.constprop.0"}
got = {s["function"]: s for s in r["sites"]}
assert set(got) == set(want), list(got)
for function, symbol in want.items():
    s = got[function]
    assert s["symbol"] == symbol, (function, s["symbol"])
    assert s["module"].endswith("/cxx_names"), s["module"]
print(" ".join("0x%x" % got[f]["offset"] for f in want))
PY
    fail "fp16: the report's sites"
read -r step_off pair_off <offsets.txt
step_label="$step (cxx_names+$step_off)"
pair_label="$pair (cxx_names+$pair_off)"
# site api calls conv shadow mode fp32-ms actual-ms speedup steady
# saved-ms max-rel-err
for x in "3:$step_label" "2:$pair_label"; do
    n=${x%%:*} label=${x#*:}
    row=$(after fp16.err "$label" | sed 's/.*]: | .\{28\} //')
    read -r -a cols <<<"$row"
    # The first call of each shape is its baseline, FP32 measured beside
    # it: an fp16 call all the same (a forced mode forces every call).
    [[ ${cols[*]:0:5} == "cublasSgemm_v2 $n $n 0 fp16" ]] ||
        fail "fp16: exit table: '$label', then '$row'"
done
echo "exit table: '$step_label' and '$pair_label', each with its row below"

# The trace: each event names its site's label; a baseline call (the first
# of each shape) is two events, its candidate and its FP32 original.
"$python" - "$tmp/trace.json" "$step_label" "$pair_label" <<'PY' ||
import collections, json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"]
          if e.get("ph") == "X"]
sites = collections.Counter(e["args"]["site"] for e in events)
assert sites == {sys.argv[2]: 3 + 1, sys.argv[3]: 2 + 1}, sites
PY
    fail "trace: the events' sites"
echo "trace: 3 events at '$step_label', 2 at '$pair_label'"

# ---- ampshim report: the table and the CSV, of this shim and an older -----
# An older shim's report: function the raw symbol, no symbol key.
"$python" - "$tmp/names.json" "$tmp/older.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r["sites"]:
    s["function"] = s.pop("symbol")
json.dump(r, open(sys.argv[2], "w"))
PY
for report in names older; do
    t "table_$report" -- report "$tmp/$report.json"
    for x in "3:$step_label" "2:$pair_label"; do
        n=${x%%:*} label=${x#*:}
        after "table_$report.out" "$label" |
            grep -qE "^ {33}cublasSgemm_v2 +$n +$n +0 fp16 " ||
            fail "report $report: no '$label' line with its row below"
    done
    t "csv_$report" -- report --csv - "$tmp/$report.json"
    grep -qF ",\"$pair\",/" "csv_$report.out" ||
        fail "report $report: the CSV's function is not quoted"
    "$python" - "$tmp/csv_$report.out" "$step" "$pair" <<'PY' ||
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
got = sorted((r["function"], r["calls"]) for r in rows)
assert got == sorted([(sys.argv[2], "3"), (sys.argv[3], "2")]), got
assert all(r["module"].endswith("/cxx_names") for r in rows), rows
PY
        fail "report $report: the CSV's function column"
done
echo "ampshim report: the labels with their rows, the CSV's functions" \
     "(an older report's mangled names too)"

# ---- A demotion: the warning and the exit line -------------------------------
printf 'set tolerance 1e-9\nrule fp16 verify 1 when gemm\ndefault fp32\n' \
    >demote.policy
t demote -- run --policy "$tmp/demote.policy" --report off -- "$prog"
for label in "$step_label" "$pair_label"; do
    [[ $(count demote.err "warning: cublasSgemm_v2 called from $label: shadow max_rel_err=") == 1 ]] ||
        fail "demote: no warning naming '$label'"
    [[ $(count demote.err "demoted cublasSgemm_v2 at $label: shadow max_rel_err=") == 1 ]] ||
        fail "demote: no exit line naming '$label'"
done
[[ $(count demote.err "exceeds the policy's tolerance 1e-09") == 4 ]] ||
    fail "demote: not 2 warnings and 2 exit lines"
echo "demotion: the warning and the exit line name each site's label"

# ---- ampshim calibrate: demangled callers, no suffix ------------------------
t cal -- calibrate -o "$tmp/names.policy" --modes tf32 --tolerance 0.01 \
    -- "$prog"
for x in "$step|$step_label|3" "$pair|$pair_label|2"; do
    function=${x%%|*} rest=${x#*|}
    label=${rest%|*} n=${rest##*|}
    rule="rule tf32 verify 1 when symbol cublasSgemm_v2 and caller \"$function\" and module \"cxx_names\""
    [[ $(count names.policy "$rule") == 1 ]] ||
        fail "calibrate: no rule '$rule'"
    [[ $(count names.policy "# cublasSgemm_v2 in $label: $n calls") == 1 ]] ||
        fail "calibrate: no comment naming '$label'"
done
! grep -E '^rule .*(_ZN|\.isra|\.constprop)' names.policy >/dev/null ||
    fail "calibrate: a rule names a symbol or a suffix"
grep -qE "^$(printf '%s' "$step_label" | sed 's/[()+]/\\&/g') +cublasSgemm_v2 +tf32 " \
    cal.out || fail "calibrate: no table row for '$step_label'"
[[ $(after cal.out "$pair_label") =~ ^\ {41}cublasSgemm_v2\ +tf32\  ]] ||
    fail "calibrate: no table row below '$pair_label'"
echo "calibrate: rules on caller \"$step\" and \"$pair\""

# check_sites REPORT STEP_MODES PAIR_MODES: each site's modes in REPORT,
# the converted ones (mode=count, sorted, comma-separated), then the calls
# kept FP32 ("fp32=count").
check_sites() {
    "$python" - "$1" "$step" "$2" "$pair" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want = {sys.argv[2]: sys.argv[3], sys.argv[4]: sys.argv[5]}
got = {s["function"]: ",".join(["%s=%d" % m for m in sorted(s["modes"].items())]
                               + (["fp32=%d" % s["fp32"]] if s["fp32"] else []))
       for s in r["sites"]}
assert got == want, got
PY
}

# The program again with that policy: each site's rule decides.
t replay -- run --policy "$tmp/names.policy" --report "$tmp/replay.json" \
    -- "$prog"
check_sites "$tmp/replay.json" "shadow=1,tf32=2" "shadow=1,tf32=1" ||
    fail "replay: the sites' modes"
echo "calibrated policy: each site verified once, then tf32"

# ---- Hand-written rules: the name, the symbol, with or without suffix -----
for x in "\"$step\":step" "_ZN3app4stepEi:step" "_ZN3app4stepEi.isra.0:step" \
         "\"model::Pair<*>::run()\":pair" \
         "_ZN5model4PairIfiE3runEv:pair"; do
    glob=${x%:*} which=${x##*:}
    printf 'rule fp16 when caller %s\ndefault fp32\n' "$glob" >hand.policy
    t hand -- run --policy "$tmp/hand.policy" --report "$tmp/hand.json" \
        -- "$prog"
    # A rule without verify: the first call of the shape is its baseline,
    # in shadow (AMPSHIM_BASELINE).
    if [[ $which == step ]]; then
        check_sites "$tmp/hand.json" "fp16=2,shadow=1" "fp32=2"
    else
        check_sites "$tmp/hand.json" "fp32=3" "fp16=1,shadow=1"
    fi || fail "caller $glob: the sites' modes"
    rm -f "$tmp/hand.json"
done
echo "hand-written caller rules: the demangled name, the symbol with and" \
     "without its suffix"
