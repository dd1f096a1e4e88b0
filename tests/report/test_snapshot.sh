#!/usr/bin/env bash
# Report snapshots during the run (AMPSHIM_SNAPSHOT), on the emulator,
# with sgemm_soak converting tiny SGEMMs in a loop:
# - stopped by SIGTERM: the last snapshot is there, "complete": false, the
#   schema's keys, calls counted; `ampshim report` says it is incomplete;
# - a normal exit after snapshots: the complete report replaced them, no
#   warning, no leftover temporary file;
# - a report path that exists before the run: never replaced, one warning
#   for the snapshots;
# - AMPSHIM_SNAPSHOT=off: a run stopped by SIGTERM leaves no report;
# - the default interval (30 s): the first snapshot comes within seconds
#   of the first call, so that a run killed by SIGINT 2 s in, and
#   report_prog segfaulting 2 s in, each leave a report marked incomplete
#   and die of that signal (the shim changes no disposition).
# usage: test_snapshot.sh SGEMM_SOAK LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#                         CHECK_SCHEMA REPORT_PROG
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6")
report_prog=$(realpath "$7")
tmp=$(mktemp -d /tmp/ampshim-snapshot-XXXXXX)
pid=
trap '[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_MODE=fp16
cd "$tmp"

fail() {
    echo "snapshot test: $*" >&2
    for f in "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
    done
    exit 1
}

# key FILE EXPR: a value of the report, e.g. key r.json '["complete"]'.
key() {
    "$python" -c "import json, sys; print(json.load(open(sys.argv[1]))$2)" \
        "$1"
}

# Starts sgemm_soak for good (it never ends by itself) under the shim.
start() {
    local name=$1
    shift
    env "$@" LD_PRELOAD="$preload$lib" "$prog" --calls 2000000000 --warmup 10 \
        --sync-every 100 --tol fp16 >"$tmp/$name.out" 2>"$tmp/$name.err" &
    pid=$!
}

# Stops it with SIGTERM: the status a shell gives.
stop() {
    local rc=0
    kill -TERM "$pid"
    wait "$pid" || rc=$?
    pid=
    [[ $rc == 143 ]] || fail "$1: status $rc after SIGTERM, not 143"
}

# ---- Stopped by SIGTERM -------------------------------------------------------
start killed AMPSHIM_SNAPSHOT=1 AMPSHIM_REPORT="$tmp/killed.json"
for _ in $(seq 300); do
    [[ -s $tmp/killed.json ]] && break
    sleep 0.1
done
[[ -s $tmp/killed.json ]] || fail "killed: no snapshot after 30 s"
sleep 1.5 # a later snapshot replaces the first
stop killed
[[ $(key killed.json '["complete"]') == False ]] ||
    fail "killed: the snapshot is not marked incomplete"
"$python" "$schema" killed.json >"$tmp/schema.out" 2>&1 ||
    fail "killed: the snapshot does not follow the schema"
calls=$(key killed.json '["totals"]["calls"]')
converted=$(key killed.json '["totals"]["converted"]')
[[ $calls -gt 0 && $converted -gt 0 ]] ||
    fail "killed: $calls calls, $converted converted in the snapshot"
ls "$tmp" | grep -q partial && fail "killed: a temporary file is left"
"$tool" report killed.json >"$tmp/report.out" 2>"$tmp/report.err" ||
    fail "ampshim report on the snapshot failed"
grep -q "^status:  incomplete: a snapshot taken during the run" \
    "$tmp/report.out" || fail "ampshim report: not said incomplete"
echo "SIGTERM: the last snapshot (complete: false, $calls calls," \
     "$converted converted), ampshim report says incomplete"

# ---- A normal exit after snapshots ----------------------------------------------
rc=0
AMPSHIM_SNAPSHOT=1 AMPSHIM_REPORT="$tmp/done.json" LD_PRELOAD="$preload$lib" \
    "$prog" --calls 150000 --warmup 10 --sync-every 100 --tol fp16 \
    >"$tmp/done.out" 2>"$tmp/done.err" || rc=$?
[[ $rc == 0 ]] || fail "done: status $rc"
[[ $(key done.json '["complete"]') == True ]] ||
    fail "done: the report is not complete"
[[ $(key done.json '["totals"]["calls"]') == 150010 ]] ||
    fail "done: $(key done.json '["totals"]["calls"]') calls, not 150010"
! grep -q "cannot write" "$tmp/done.err" || fail "done: a warning"
ls "$tmp" | grep -q partial && fail "done: a temporary file is left"
echo "exit: the complete report replaced the snapshots"

# ---- A path that exists ---------------------------------------------------------
echo keep >"$tmp/taken.json"
start taken AMPSHIM_SNAPSHOT=1 AMPSHIM_REPORT="$tmp/taken.json"
for _ in $(seq 300); do
    grep -q "cannot write a snapshot" "$tmp/taken.err" && break
    sleep 0.1
done
stop taken
[[ $(cat "$tmp/taken.json") == keep ]] || fail "taken: the file was replaced"
warning="cannot write a snapshot of the report to $tmp/taken.json: the path"
[[ $(grep -c "$warning exists" "$tmp/taken.err") == 1 ]] ||
    fail "taken: the snapshot warning"
echo "existing path: kept, one warning"

# ---- AMPSHIM_SNAPSHOT=off -------------------------------------------------------
start off AMPSHIM_SNAPSHOT=off AMPSHIM_REPORT="$tmp/off.json"
sleep 3
stop off
[[ ! -e $tmp/off.json ]] || fail "off: a report was written"
echo "AMPSHIM_SNAPSHOT=off: no report from a run stopped by SIGTERM"

# ---- The first snapshot within seconds, under the default interval -----------
ulimit -c 0
# early NAME SIGNAL: the status 128 + SIGNAL, a report marked incomplete.
early() {
    local want=$((128 + $(kill -l "$2")))
    [[ $rc == "$want" ]] ||
        fail "$1: status $rc, not $want: the program's death changed"
    [[ -s $tmp/$1.json ]] || fail "$1: no report 2 s into the run"
    [[ $(key "$1.json" '["complete"]') == False ]] ||
        fail "$1: the report is not marked incomplete"
    [[ $(key "$1.json" '["totals"]["calls"]') -gt 0 ]] ||
        fail "$1: no call in the snapshot"
}
# A background program of a shell without job control starts with SIGINT
# ignored (and so does one whose test runner ignores it): sgemm_soak
# starts with SIGINT's default disposition, as from a terminal.
AMPSHIM_REPORT="$tmp/early-int.json" "$python" -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.environ["LD_PRELOAD"] = sys.argv[1]
os.execv(sys.argv[2], sys.argv[2:])' "$preload$lib" "$prog" \
    --calls 2000000000 --warmup 10 --sync-every 100 --tol fp16 \
    >"$tmp/early-int.out" 2>"$tmp/early-int.err" &
pid=$!
sleep 2
for _ in $(seq 100); do
    [[ -s $tmp/early-int.json ]] && break
    sleep 0.1
done
rc=0
kill -INT "$pid"
wait "$pid" || rc=$?
pid=
early early-int INT
rc=0
# A sanitized build's runtime would catch the fault itself (and exit 1):
# here the program dies by the signal, as it does without one.
AMPSHIM_REPORT="$tmp/early-segv.json" LD_PRELOAD="$preload$lib" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0" \
    "$report_prog" --calls 1 --m 64 --n 64 --k 64 --segv-after 2000 \
    >"$tmp/early-segv.out" 2>"$tmp/early-segv.err" || rc=$?
early early-segv SEGV
echo "default interval: killed by SIGINT and a segfault 2 s in, each" \
     "leaves an incomplete report"
