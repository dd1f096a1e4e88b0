#!/usr/bin/env bash
# The figures a user reads in three places agree with the report's JSON to
# the digits shown: report_prog's two call sites (three shapes) under
# AMPSHIM_MODE=fp16, each shape's first call an FP32 baseline (so that
# speedup, over every call, and steady, each shape's FP32 time over its
# time under the mode, differ):
# - the exit table: each site row's speedup and steady columns are its
#   site's time.speedup and time.steady_speedup, the total row the
#   totals' speedup and steady_speedup;
# - `ampshim report`: the same for its site rows, each shape row against
#   its shape's, and the total line;
# - the page of `ampshim report --html`: each site's speedup and steady
#   cells in the sites table, each shape's two speedup cells.
# usage: test_numbers.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5
tmp=$(mktemp -d /tmp/ampshim-numbers-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

fail() {
    echo "numbers test: $*" >&2
    for f in "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
    done
    exit 1
}

LD_PRELOAD="$preload$lib" AMPSHIM_MODE=fp16 AMPSHIM_REPORT=$tmp/r.json \
    "$prog" --calls 12 --m 256 --n 192 --k 128 --m2 128 --n2 160 \
    --k2 96 >run.out 2>run.err || fail "the run under the shim failed"
"$tool" report r.json >table.out 2>table.err || fail "ampshim report"
"$tool" report r.json --html page.html >html.out 2>html.err ||
    fail "ampshim report --html"

"$python" - r.json run.err table.out page.html <<'PY' || fail "figures differ"
import collections, json, re, sys

doc = json.load(open(sys.argv[1]))
exit_lines = open(sys.argv[2]).read().splitlines()
table = open(sys.argv[3]).read().splitlines()
page = open(sys.argv[4]).read()
bad = []

def cell(v):
    return "-" if v is None else f"{v:.2f}"

def pair(time):
    return (cell(time.get("speedup")), cell(time.get("steady_speedup")))

sites = [pair(s["time"]) for s in doc["sites"]]
shapes = [pair(sh["time"]) for s in doc["sites"] for sh in s["shapes"]]
total = pair(doc["totals"])
print(f"report: sites {sites}, shapes {shapes}, total {total}")
if len(sites) != 2 or len(shapes) != 3:
    bad.append(f"{len(sites)} sites and {len(shapes)} shapes, want 2 and 3")
if all(a == b for a, b in sites + shapes + [total]):
    bad.append("speedup equals steady everywhere: the test sees nothing")

def same(where, got, want):
    if collections.Counter(got) != collections.Counter(want):
        bad.append(f"{where}: {sorted(got)}, the report {sorted(want)}")

# The exit table: "ampshim[PID]: | SITE API CALLS CONV MODE FP32 ACTUAL
# SPEEDUP STEADY SAVED ERR"; a site's row names its api.
rows, tot = [], None
for line in exit_lines:
    m = re.match(r"ampshim\[\d+\]: \| (.*)$", line)
    if not m:
        continue
    f = m.group(1).replace("exactly FP32", "exactly-FP32").split()
    if len(f) < 10 or f[0] == "site":
        continue
    if f[0] == "total":
        tot = (f[-4], f[-3])
    elif any(x.startswith("cublas") for x in f):
        rows.append((f[-4], f[-3]))
same("exit table, sites", rows, sites)
if tot != total:
    bad.append(f"exit table, total: {tot}, the report {total}")

# ampshim report: "SITE API CALLS CONV MODE FP32 ACTUAL SPEEDUP STEADY
# SAVED ERR TOLERANCE"; site rows (an api column), shape rows (indented,
# after their site), the total line.
rows, shape_rows = [], []
for line in table:
    f = line.replace("exactly FP32", "exactly-FP32").split()
    if len(f) < 11 or f[0] == "site":
        continue
    if line.startswith("  "):
        shape_rows.append((f[-5], f[-4]))
    elif any(x.startswith("cublas") for x in f):
        rows.append((f[-5], f[-4]))
same("ampshim report, sites", rows, sites)
same("ampshim report, shapes", shape_rows, shapes)
m = re.search(r"speedup (\S+) \(steady state (\S+)\);",
              "\n".join(table))
if not m or (m.group(1), m.group(2)) != total:
    bad.append(f"ampshim report, total: "
               f"{m.groups() if m else None}, the report {total}")

# The page's sites table: site, api, calls, converted, shadow, mode, FP32
# ms, actual ms, speedup, steady, ...
section = page.split('<section id="sites">', 1)[1].split("</section>", 1)[0]
cells = []
for row in re.findall(r"<tr[^>]*>(.*?)</tr>", section, re.S):
    tds = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    if len(tds) >= 10:
        cells.append((tds[8], tds[9]))
same("page, sites", cells, sites)

# The page: each shape's cells, "<td>S.SSx</td><td>T.TTx</td>".
cells = re.findall(r"<td>([0-9.]+|-)x?</td><td>([0-9.]+|-)x?</td><td>"
                   r"[^<]* / ", page)
same("page, shapes", cells, shapes)
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
echo "numbers test: all checks passed"
