#!/usr/bin/env bash
# Two runs compared, and one run's CSV per shape: report_prog run twice
# under `ampshim run`, A under --mode tf32 with one call per site (its
# second site's shape 1024x768x1024 only), B under --mode fp16 with two
# (the second site's 1024x768x512 too):
# - `ampshim report --csv - --shapes`: one row per (site, shape) of the
#   report, its shape's calls, modes, times and delivered error as the
#   JSON has them;
# - `ampshim report --diff A B`: both files named, each site and shape of
#   A beside B's (calls, modes, each side's time as the JSON has it, B's
#   time over A's), the shape only in B marked so, and the count of rows
#   only in A and B; swapped, the same row only in A;
# - --diff --csv -: one row per (site, shape), present both, a or b, each
#   side's figures the JSON's;
# - a file that is missing, not JSON, or JSON but no report, as A or B:
#   status 1, the file named, nothing on standard output; --diff with one
#   report, or with --html: a usage error (2).
# usage: test_diff.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5
tmp=$(mktemp -d /tmp/ampshim-diff-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$lib
cd "$tmp"

fail() {
    echo "diff test: $*" >&2
    for f in "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
    done
    exit 1
}

# run NAME CALLS MODE: report_prog under `ampshim run`.
run() {
    env LD_PRELOAD="${AMP_TEST_PRELOAD_FIRST:-}" \
        "$tool" run --mode "$3" --report "$1.json" -- "$prog" --calls "$2" \
        --m 512 --n 512 --k 512 --m2 1024 --n2 768 --k2 1024 \
        >"$1.run.out" 2>"$1.run.err" || fail "$1: the run failed"
}
run a 1 tf32
run b 2 fp16

"$tool" report --csv - --shapes b.json >shapes.csv 2>shapes.err ||
    fail "report --csv - --shapes"
"$tool" report --diff a.json b.json >ab.out 2>ab.err || fail "--diff a b"
"$tool" report --diff b.json a.json >ba.out 2>ba.err || fail "--diff b a"
"$tool" report --diff a.json b.json --csv - >ab.csv 2>ab-csv.err ||
    fail "--diff a b --csv -"

"$python" - <<'PY' || fail "the outputs disagree with the reports"
import csv, json

bad = []
docs = {n: json.load(open(n + ".json")) for n in ("a", "b")}

def shapes(doc):
    """(function, shape text) -> (site, shape) of a report."""
    return {(s["function"], sh["shape"]): (s, sh)
            for s in doc["sites"] for sh in s["shapes"]}

def ms(v):
    return "-" if v is None else f"{v:.3f}"

sa, sb = shapes(docs["a"]), shapes(docs["b"])
only_b = set(sb) - set(sa)
if set(sa) - set(sb) or len(only_b) != 1 or \
        next(iter(only_b))[1] != "1024x768x512 NN":
    bad.append(f"the runs' shapes: A {sorted(sa)}, B {sorted(sb)}")

# --csv --shapes: a row per (site, shape), the JSON's figures.
rows = list(csv.DictReader(open("shapes.csv")))
got = {(r["function"], r["shape"]): r for r in rows}
if len(rows) != len(sb) or set(got) != set(sb):
    bad.append(f"--shapes: rows {sorted(got)}, shapes {sorted(sb)}")
for key, r in got.items():
    site, sh = sb.get(key, (None, None))
    if sh is None:
        continue
    t = sh["time"]
    if int(r["calls"]) != sh["calls"] or r["modes"] != "fp16" or \
            r["api"] != site["api"] or float(r["offset"]) != site["offset"]:
        bad.append(f"--shapes {key}: {r}")
    if abs(float(r["actual_ms"]) - t["actual_ms"]) > 1e-8 * t["actual_ms"]:
        bad.append(f"--shapes {key}: actual_ms {r['actual_ms']}, JSON "
                   f"{t['actual_ms']}")
    want = sh["errors"]["delivered_max_rel"]
    if want is None or abs(float(r["delivered_rel_err"]) - want) > \
            1e-8 * want:
        bad.append(f"--shapes {key}: delivered {r['delivered_rel_err']}, "
                   f"JSON {want}")

# --diff a b: the headers, a row per shape with both sides' figures.
def table(name):
    return open(name).read().splitlines()

for name, first, second, mark in (("ab.out", "a", "b", "only in B"),
                                  ("ba.out", "b", "a", "only in A")):
    out = table(name)
    if not out[0].startswith(f"A: {first}.json: report_prog (pid ") or \
            not any(l.startswith(f"B: {second}.json: report_prog")
                    for l in out):
        bad.append(f"{name}: the header {out[:6]}")
    x, y = shapes(docs[first]), shapes(docs[second])
    for key in sorted(set(x) | set(y)):
        line = [l for l in out if l.startswith("  " + key[1] + " ")]
        if len(line) != 1:
            bad.append(f"{name}: rows of {key}: {line}")
            continue
        cells = line[0][2 + len(key[1]):].split()
        if key in x and key in y:
            a, b = x[key][1], y[key][1]
            want = [str(a["calls"]), str(b["calls"]),
                    first == "a" and "tf32" or "fp16",
                    first == "a" and "fp16" or "tf32",
                    ms(a["time"]["actual_ms"]), ms(b["time"]["actual_ms"]),
                    f"{b['time']['actual_ms'] / a['time']['actual_ms']:.2f}"]
            if cells[:7] != want or "only in" in line[0]:
                bad.append(f"{name}: {key}: {cells[:7]}, want {want}")
        elif not line[0].endswith(mark):
            bad.append(f"{name}: {key} not marked {mark!r}: {line[0]}")
    counts = "rows (sites and shapes) only in A: %d; only in B: %d" % \
        ((0, 1) if first == "a" else (1, 0))
    if counts not in out:
        bad.append(f"{name}: lacks {counts!r}")

# --diff --csv: each (site, shape) once, the sides' figures.
rows = list(csv.DictReader(open("ab.csv")))
got = {(r["function"], r["shape"]): r for r in rows}
if len(rows) != len(set(sa) | set(sb)) or set(got) != set(sa) | set(sb):
    bad.append(f"--diff --csv rows {sorted(got)}")
for key, r in got.items():
    present = "both" if key in sa and key in sb else "b"
    if r["present"] != present:
        bad.append(f"--diff --csv {key}: present {r['present']}")
    for side, table_ in (("a", sa), ("b", sb)):
        if key not in table_:
            if r[side + "_calls"] != "" or r[side + "_modes"] != "":
                bad.append(f"--diff --csv {key}: {side} not empty")
            continue
        sh = table_[key][1]
        if int(r[side + "_calls"]) != sh["calls"] or \
                abs(float(r[side + "_actual_ms"]) - sh["time"]["actual_ms"]) \
                > 1e-8 * sh["time"]["actual_ms"] or \
                r[side + "_modes"] != ("tf32" if side == "a" else "fp16"):
            bad.append(f"--diff --csv {key} {side}: {r}")
for l in bad:
    print(l)
raise SystemExit(1 if bad else 0)
PY

# Files that are no report: named, status 1, nothing printed.
printf '{"schema": "other", "sites": []}' >other.json
printf 'not json' >text.json
for args in "a.json missing.json" "missing.json b.json" "a.json text.json" \
            "other.json b.json"; do
    set +e
    # shellcheck disable=SC2086
    "$tool" report --diff $args >bad.out 2>bad.err
    rc=$?
    set -e
    bad=${args/a.json /}
    bad=${bad/ b.json/}
    [[ $rc == 1 ]] || fail "--diff $args: status $rc, not 1"
    [[ ! -s bad.out ]] || fail "--diff $args: printed before the error"
    grep -qF "ampshim report: $bad: " bad.err ||
        fail "--diff $args: the error does not name $bad"
done
for args in "--diff a.json" "--diff a.json b.json --html x.html" \
            "--shapes a.json"; do
    set +e
    # shellcheck disable=SC2086
    "$tool" report $args >bad.out 2>bad.err
    rc=$?
    set -e
    [[ $rc == 2 && ! -s bad.out ]] ||
        fail "report $args: status $rc, not a usage error"
done
echo "diff test: ok"
