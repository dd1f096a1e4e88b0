#!/usr/bin/env bash
# What a user reads about one run agrees everywhere on which calls gave
# the program a converted result and which were only measured in shadow
# (their result FP32's), and the verdict says what is true: report_prog
# calling each of its shapes once (1024^3 at main, 1024x768x1024 at
# second_site),
# under --mode fp16 (each call a converted call, its FP32 original timed
# beside it and discarded) and under the built-in policy (auto measures
# its candidates in shadow: the program gets FP32's results):
# - the report: totals.delivered and totals.shadow, and the verdict by
#   the figures (still measuring while auto measures; faster or slower by
#   the steady state under fp16); the report follows the schema;
# - the exit table: the verdict line first, the total row's conv and
#   shadow columns, and the error column "exactly FP32" where no
#   converted result reached the program;
# - `ampshim report`: the verdict first, the total line's counts;
# - the CSV: the converted and shadow columns summed over the sites;
# - the page: the verdict and the summary's counts, no "Nothing to
#   change" where nothing was converted or the work got slower, and no
#   site whose calls all ran FP32 marked "converted";
# - the trace: the events whose result reached the program (category
#   converted, or shadow for a shadow call's FP32 original) and those
#   discarded (candidate, baseline), and otherData's counts.
# usage: test_agree.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#                      CHECK_SCHEMA
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6")
tmp=$(mktemp -d /tmp/ampshim-agree-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$lib
cd "$tmp"

fail() {
    echo "agree test: $*" >&2
    for f in "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
    done
    exit 1
}

# run NAME [OPTIONS]: report_prog under `ampshim run`, with every output.
run() {
    local name=$1
    shift
    env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" \
        "$tool" run "$@" --report "$name.json" --trace "$name.trace" -- "$prog" \
        --calls 1 --m 1024 --n 1024 --k 1024 --m2 1024 --n2 768 --k2 1024 \
        >"$name.out" 2>"$name.err" || fail "$name: the run failed"
    "$python" "$schema" "$name.json" >"$name-schema.out" 2>&1 ||
        fail "$name: the report does not follow the schema"
    "$tool" report "$name.json" --csv "$name.csv" --html "$name.html" \
        >"$name.table" 2>"$name-table.err" || fail "$name: ampshim report"
}

run fp16 --mode fp16
run auto

"$python" - <<'PY' || fail "the outputs disagree"
import csv, json, re

bad = []

def check(name, mode):
    doc = json.load(open(name + ".json"))
    t = doc["totals"]
    conv, shadow, calls = t["delivered"], t["shadow"], t["calls"]
    verdict = t["verdict"]
    print(f"{name}: {calls} calls, {conv} converted, {shadow} shadow; "
          f"verdict: {verdict}")
    if mode == "fp16":
        if (conv, shadow) != (calls, 0):
            bad.append(f"{name}: {conv} converted, {shadow} shadow of "
                       f"{calls}: every call gave the program fp16's result")
        steady = t["steady_speedup"]
        want = "faster: " if steady >= 1.005 else "slower: " \
            if steady <= 0.995 else "nothing to gain here: "
        if not verdict.startswith(want) or f"{steady:.2f}x" not in verdict:
            bad.append(f"{name}: steady {steady}, verdict {verdict!r}")
    else:
        if conv != 0 or shadow != calls:
            bad.append(f"{name}: {conv} converted, {shadow} shadow of "
                       f"{calls}: auto measures its first calls in shadow")
        if t["shapes_measuring"] != t["shapes"] or \
                not verdict.startswith("still measuring: auto needs about "
                                       "ten calls per shape"):
            bad.append(f"{name}: {t['shapes_measuring']} of {t['shapes']} "
                       f"shapes measuring, verdict {verdict!r}")

    # The exit table: the verdict, the time line, the table, its total row.
    err = [re.sub(r"^ampshim\[\d+\]: ", "", l)
           for l in open(name + ".err").read().splitlines()]
    said = [l for l in err if l.startswith("verdict: ")]
    table = [i for i, l in enumerate(err) if l.startswith("| site ")]
    if said != ["verdict: " + verdict] or not table or \
            err.index(said[0]) + 2 != table[0] or \
            not err[table[0] - 1].startswith("time: "):
        bad.append(f"{name}: the exit's verdict {said}, not first (then "
                   "the time line, then the table)")
    total = [l.split() for l in err if l.startswith("| total ")]
    if not total or total[0][2:5] != [str(calls), str(conv), str(shadow)]:
        bad.append(f"{name}: exit table total {total}")
    elif conv == 0 and not err[[l.startswith("| total ")
                                 for l in err].index(True)].endswith(
                                     "exactly FP32"):
        bad.append(f"{name}: the total's error is not exactly FP32")

    # ampshim report: the verdict first, the total line.
    out = open(name + ".table").read().splitlines()
    if out[0] != "verdict: " + verdict:
        bad.append(f"{name}: ampshim report starts {out[0]!r}")
    want = f"total: {calls} calls, {conv} converted, {shadow} measured in " \
           "shadow;"
    if not any(l.startswith(want) for l in out):
        bad.append(f"{name}: ampshim report lacks {want!r}")

    # The CSV: converted and shadow summed over the sites.
    rows = list(csv.DictReader(open(name + ".csv")))
    got = (sum(int(r["converted"]) for r in rows),
           sum(int(r["shadow"]) for r in rows))
    if got != (conv, shadow):
        bad.append(f"{name}: CSV converted, shadow {got}")
    for r in rows:
        if int(r["converted"]) == 0 and float(r["delivered_rel_err"]) != 0:
            bad.append(f"{name}: CSV: a site without converted results has "
                       f"the error {r['delivered_rel_err']}")

    # The page.
    page = open(name + ".html").read()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    if f"{calls} calls at 2 sites, {conv} converted (their converted " \
            f"results reached the program), {shadow} measured in shadow" \
            not in text:
        bad.append(f"{name}: the page's summary")
    v = re.search(r'<p id="verdict"><strong>(.*?)</strong></p>', page)
    if not v or v.group(1).replace("&#39;", "'") != verdict:
        bad.append(f"{name}: the page's verdict {v and v.group(1)!r}")
    if (conv == 0 or verdict.startswith("slower")) and \
            "Nothing to change" in text:
        bad.append(f"{name}: the page says Nothing to change")
    status = re.findall(r'<td class="t status">(.*?)</td>', page)
    if conv == 0 and any(s.startswith("converted") for s in status):
        bad.append(f"{name}: a site that converted nothing: {status}")

    # The trace: what reached the program, what was discarded.
    tr = json.load(open(name + ".trace"))
    cats = {}
    for e in tr["traceEvents"]:
        if e.get("ph") == "X":
            cats[e["cat"]] = cats.get(e["cat"], 0) + 1
            if e["args"]["delivered"] != (e["cat"] in ("converted",
                                                       "shadow")):
                bad.append(f"{name}: trace: {e['name']} {e['cat']} "
                           f"delivered {e['args']['delivered']}")
    want = {"converted": conv, "baseline": conv} if mode == "fp16" else \
        {"candidate": shadow, "shadow": shadow}
    if cats != want:
        bad.append(f"{name}: trace categories {cats}, want {want}")
    other = {k: tr["otherData"].get(k) for k in ("calls", "delivered",
                                                  "shadow")}
    if other != {"calls": calls, "delivered": conv, "shadow": shadow}:
        bad.append(f"{name}: trace otherData {other}")

check("fp16", "fp16")
check("auto", "auto")
for l in bad:
    print(l)
raise SystemExit(1 if bad else 0)
PY
echo "agree test: ok"
