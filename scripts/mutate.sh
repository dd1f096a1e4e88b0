#!/usr/bin/env bash
# Mutation test of the suite: applies each mutant of tests/mutants.txt (a
# plausible one-line bug) to a scratch copy of the tree, one at a time,
# rebuilds, runs the tests, and prints which mutants a test killed and the
# kill rate. The real tree is never modified: the copy lives under
# $TMPDIR and is removed on exit, interrupted or not.
#
# usage: scripts/mutate.sh [--only N[,N...]] [--list FILE] [--keep] [--check]
#   --check  only check the list: every record whole, every line found
#   --only   run these mutants (numbered from 1 in the list's order)
#   --list   another list in the same format
#   --keep   leave the scratch copy (its path is printed)
# environment:
#   JOBS            parallel build jobs and tests
#   MUTATE_TESTS    meson test's selection (default: every suite but long,
#                   soak and install, the suite CI runs minus the two slow
#                   ones that test no converted call's math)
#   MUTATE_GOAL     the kill rate, in percent, to exit 0 (default 95): of
#                   the mutants that are bugs, that is all but the known
#                   survivors whose reason starts with "equivalent:" (the
#                   change alters no behaviour; no test can kill it)
#   MUTATE_TIMEOUT  seconds one mutant's tests may take (default 1800)
#   MUTATE_FULL     1: run the whole selection for known survivors too
#                   (default 0: a mutant whose record says why it survives
#                   and that its named tests do not kill is counted as a
#                   survivor, as the whole selection would at most turn
#                   it into a kill; the rate is then a lower bound)
# A mutant whose record names tests ("tests: NAME...") runs those first;
# one they kill is killed (minutes, not the suite's half hour), one they
# do not kill runs the whole selection before it is called a survivor.
# Exits 0 when the rate meets the goal and every survivor is a known one
# (its record says why it survives), 1 otherwise, 2 on a broken list or a
# tree whose tests fail unmutated.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=$root/tests/mutants.txt
only=""
keep=0
check=0
tests=${MUTATE_TESTS:-"--no-suite long --no-suite soak --no-suite install"}
goal=${MUTATE_GOAL:-95}
limit=${MUTATE_TIMEOUT:-1800}
full=${MUTATE_FULL:-0}

while [[ $# -gt 0 ]]; do
    case $1 in
    --only) only=$2; shift 2 ;;
    --list) list=$(realpath "$2"); shift 2 ;;
    --keep) keep=1; shift ;;
    --check) check=1; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ampshim-mutate.XXXXXX")
cleanup() {
    if [[ $keep == 1 ]]; then
        echo "mutate: scratch copy kept in $scratch"
    else
        rm -rf "$scratch"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The list, parsed once: one mutant a record, fields apart by NUL bytes.
# The same parser applies a mutant; it checks that each original line
# occurs exactly once (after its "near" line when it has one).
mutant_tool() {
    python3 - "$@" <<'EOF'
import sys

def records(path):
    out, cur = [], {}
    for line in open(path, encoding="utf-8").read().split("\n"):
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                out.append(cur)
            cur = {}
            continue
        key, sep, value = line.partition(": ")
        if not sep and line.endswith(":"):
            key, value = line[:-1], ""
        cur[key] = value
    if cur:
        out.append(cur)
    return out

def locate(root, rec):
    lines = open(f"{root}/{rec['file']}", encoding="utf-8").read().split("\n")
    start = 0
    if "near" in rec:
        near = [i for i, l in enumerate(lines) if l == rec["near"]]
        if len(near) != 1:
            return lines, -1, f"'near' line found {len(near)} times"
        start = near[0]
    hits = [i for i, l in enumerate(lines) if l == rec["from"] and i >= start]
    if "near" in rec:
        hits = hits[:1]
    if len(hits) != 1:
        return lines, -1, f"'from' line found {len(hits)} times"
    return lines, hits[0], ""

cmd, path, root = sys.argv[1], sys.argv[2], sys.argv[3]
recs = records(path)
if cmd == "check":
    bad = 0
    for n, rec in enumerate(recs, 1):
        missing = [k for k in ("file", "from", "to", "bug", "tests") if k not in rec]
        if missing:
            print(f"mutant {n}: no {', '.join(missing)}", file=sys.stderr)
            bad = 1
            continue
        if not rec["tests"].split():
            print(f"mutant {n} ({rec['file']}): no test named", file=sys.stderr)
            bad = 1
        _, at, why = locate(root, rec)
        if at < 0:
            print(f"mutant {n} ({rec['file']}): {why}", file=sys.stderr)
            bad = 1
    print(len(recs))
    sys.exit(bad)
rec = recs[int(sys.argv[4]) - 1]
if cmd == "field":
    print(rec.get(sys.argv[5], ""))
elif cmd == "apply":
    lines, at, why = locate(root, rec)
    if at < 0:
        sys.exit(why)
    lines[at] = rec["to"]
    open(f"{root}/{rec['file']}", "w", encoding="utf-8").write("\n".join(lines))
EOF
}

# --check reads the tree in place (it may be a copy without git). In a
# mutant's run of the suite it is skipped (77): the mutant's own line is
# missing from that tree by construction, which is no kill.
if [[ $check == 1 && -n ${MUTATE_MUTANT:-} ]]; then
    echo "mutate: --check skipped in the tree of mutant $MUTATE_MUTANT"
    exit 77
fi
if [[ $check == 1 ]]; then
    count=$(mutant_tool check "$list" "$root") || {
        echo "mutate: $list has broken records" >&2
        exit 2
    }
    echo "mutate: $count mutants in $list, each line found once"
    exit 0
fi

# The copy: tracked and untracked files that git does not ignore, as they
# are in the working tree.
mkdir -p "$scratch/src"
git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && tar --null --ignore-failed-read -T - -cf -) |
    tar -C "$scratch/src" -xf -
src=$scratch/src
build=$scratch/build

count=$(mutant_tool check "$list" "$src") || {
    echo "mutate: $list has broken records" >&2
    exit 2
}
if [[ -n $only ]]; then
    IFS=, read -r -a chosen <<<"$only"
else
    chosen=($(seq 1 "$count"))
fi

echo "mutate: $count mutants in $list; running ${#chosen[@]}; tests: meson test $tests"
echo "mutate: building the unmutated copy in $build"
if ! "$src/scripts/build.sh" "$build" gcc >"$scratch/build.log" 2>&1; then
    tail -n 30 "$scratch/build.log" >&2
    echo "mutate: the unmutated tree does not build" >&2
    exit 2
fi
# run_tests LOG ARGS...: meson test with these arguments, its output
# appended to LOG; fails when a test fails or the time runs out.
run_tests() {
    local log=$1
    shift
    MUTATE_MUTANT=${mutant:-} timeout "$limit" meson test -C "$build" \
        --no-rebuild --maxfail 1 ${JOBS:+--num-processes "$JOBS"} "$@" \
        >>"$log" 2>&1
}
# failed_tests LOG: the tests that failed in LOG (not the expected
# failures), or nothing when the run was cut short by the time limit.
failed_tests() {
    grep -E '^ *[0-9]+/[0-9]+ .*[[:space:]](FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)[[:space:]]' "$1" |
        sed -E 's/^ *[0-9]+\/[0-9]+ +[^ ]+ \/ ([^ ]+).*/\1/' |
        sort -u | tr '\n' ' ' | sed 's/ $//'
}

# A name that is not a test would fail meson test and pass for a kill.
all_tests=$(meson test -C "$build" --no-rebuild --list 2>/dev/null |
            sed -E 's/^[^ ]+ \/ //')
for n in "${chosen[@]}"; do
    for t in $(mutant_tool field "$list" "$src" "$n" tests); do
        if ! grep -qxF "$t" <<<"$all_tests"; then
            echo "mutate: mutant $n names $t, which is not a test" >&2
            exit 2
        fi
    done
done

# The unmutated tree must pass what a mutant is held to, or no kill means
# anything: the named tests of the chosen mutants here, any other test
# that kills a mutant once that mutant is undone.
baseline() {
    if ! run_tests "$scratch/baseline.log" "$@"; then
        grep -E '^ *[0-9]+/[0-9]+ ' "$scratch/baseline.log" | grep -v ' OK ' >&2 ||
            tail -n 20 "$scratch/baseline.log" >&2
        echo "mutate: the unmutated tree fails its tests; no kill means anything" >&2
        exit 2
    fi
}
# shellcheck disable=SC2046 # the names are words
baseline $(for n in "${chosen[@]}"; do
               mutant_tool field "$list" "$src" "$n" tests
           done | tr ' ' '\n' | sort -u)

killed=0 survived=0 unexplained=0 stillborn=0 equivalent=0
for n in "${chosen[@]}"; do
    mutant=$n
    file=$(mutant_tool field "$list" "$src" "$n" file)
    named=$(mutant_tool field "$list" "$src" "$n" tests)
    bug=$(mutant_tool field "$list" "$src" "$n" bug)
    known=$(mutant_tool field "$list" "$src" "$n" survives)
    cp "$src/$file" "$scratch/original"
    mutant_tool apply "$list" "$src" "$n"
    log=$scratch/mutant-$n.log
    # shellcheck disable=SC2086 # $named and $tests are lists of arguments
    if ! ninja -C "$build" ${JOBS:+-j "$JOBS"} >"$log" 2>&1; then
        verdict="stillborn (does not build)"
        stillborn=$((stillborn + 1))
    elif ! run_tests "$log" $named; then
        killed=$((killed + 1))
        by=$(failed_tests "$log")
        verdict="killed by ${by:-the time limit}"
    elif [[ -n $known && $full != 1 ]]; then
        survived=$((survived + 1))
        verdict="survived its named tests (known: $known)"
        [[ $known == equivalent:* ]] && equivalent=$((equivalent + 1))
    elif ! run_tests "$log" $tests; then
        # Tests beyond the named ones were not run unmutated: a kill
        # counts only if they pass on the original.
        by=$(failed_tests "$log")
        cp "$scratch/original" "$src/$file"
        touch "$src/$file"
        ninja -C "$build" ${JOBS:+-j "$JOBS"} >>"$log" 2>&1
        [[ -z $by ]] || baseline $by
        killed=$((killed + 1))
        verdict="killed by ${by:-the time limit} (not by its named tests)"
    else
        survived=$((survived + 1))
        if [[ -n $known ]]; then
            verdict="survived (known: $known)"
            [[ $known == equivalent:* ]] && equivalent=$((equivalent + 1))
        else
            verdict="SURVIVED"
            unexplained=$((unexplained + 1))
        fi
    fi
    # The original back, newer than the mutant's objects.
    cp "$scratch/original" "$src/$file"
    touch "$src/$file"
    echo "mutant $n ($file): $bug: $verdict"
done

ran=$((killed + survived))
bugs=$((ran - equivalent))
if [[ $bugs -gt 0 ]]; then
    rate=$((100 * killed / bugs))
else
    rate=0
fi
echo "mutate: $ran run: $killed killed, $survived survived ($equivalent" \
     "equivalent, $unexplained unexplained); killed ${rate}% of the $bugs" \
     "that are bugs ($((100 * killed / (ran > 0 ? ran : 1)))% of all);" \
     "stillborn $stillborn"
if [[ $bugs -gt 0 && $rate -ge $goal && $unexplained -eq 0 ]]; then
    exit 0
fi
exit 1
