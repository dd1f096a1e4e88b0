#!/usr/bin/env bash
# One job's reports: two processes of report_prog started as Open MPI's
# mpirun starts ranks (OMPI_COMM_WORLD_* set), each writing its report
# through AMPSHIM_REPORT=DIR/rank-%r.json, rank 1 with its GEMMs kept FP32;
# then `ampshim report DIR` and `ampshim report FILE FILE --csv -`:
# - the reports' job objects (launcher, rank, local rank, size, id);
# - the summary: one line per rank, the totals, the slowest rank, each
#   site's spread across the ranks, the site whose decisions differ;
# - a file in the directory that is not a report is named and left out;
#   --html with several reports is a usage error.
# usage: test_job.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#                    CHECK_SCHEMA
set -euo pipefail

prog=$(realpath "$1") shim=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6")
tmp=$(mktemp -d /tmp/ampshim-job-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "job test: $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true) $(compgen -v OMPI_ || true)
unset RANK LOCAL_RANK WORLD_SIZE SLURM_PROCID PMI_RANK PMIX_RANK
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$shim
cd "$tmp"
mkdir reports

for rank in 0 1; do
    mode=tf32
    [[ $rank == 1 ]] && mode=fp32
    OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_LOCAL_RANK=$rank \
        OMPI_COMM_WORLD_SIZE=2 OMPI_MCA_ess_base_jobid=4242 \
        "$tool" run --mode $mode --report 'reports/rank-%r.json' -- \
        "$prog" --m 256 --n 128 --k 512 --calls 4 >run$rank.out 2>run$rank.err ||
        fail "rank $rank: status"
    [[ -f reports/rank-$rank.json ]] || fail "rank $rank: no rank-$rank.json"
    "$python" "$schema" reports/rank-$rank.json >schema.out ||
        fail "rank $rank: schema"
done
"$python" - reports/rank-1.json <<'PY' || fail "rank 1: job object"
import json, sys
job = json.load(open(sys.argv[1]))["job"]
assert job == {"launcher": "openmpi", "rank": 1, "local_rank": 1,
               "size": 2, "id": "4242"}, job
PY
echo '{"not": "a report"}' >reports/other.json

"$tool" report reports >sum.out 2>sum.err || fail "summary: status"
grep -qx 'ampshim report: reports/other.json: not an ampshim report' sum.err ||
    fail "summary: the file that is not a report is not named"
grep -qx 'job: 2 processes (openmpi, job 4242, size 2)' sum.out ||
    fail "summary: job line"
grep -Eq '^0 +[^ ]+ +NVIDIA H100 SXM \(emulated\) +4 +4 .* reports/rank-0.json$' sum.out ||
    fail "summary: rank 0's line"
grep -Eq '^1 +[^ ]+ +NVIDIA H100 SXM \(emulated\) +4 +0 +- +- +-  reports/rank-1.json$' sum.out ||
    fail "summary: rank 1's line (no time known: '-')"
grep -q '^total: 8 calls, 4 converted; ' sum.out || fail "summary: total"
grep -q '^slowest: rank 0, ' sum.out || fail "summary: slowest rank"
grep -Eq '^main \(report_prog\+0x[0-9a-f]+\) +cublasSgemm_v2 +2 +4/4/4 ' sum.out ||
    fail "summary: main's spread"
grep -Eq '^decisions differ at main \(report_prog\+0x[0-9a-f]+\) cublasSgemm_v2: modes: 0=tf32\+shadow 1=fp32$' sum.out ||
    fail "summary: differing decisions"

"$tool" report --csv - reports/rank-1.json reports/rank-0.json >sum.csv \
    2>csv.err || fail "CSV: status"
head -1 sum.csv | grep -q '^api,function,module,offset,processes,calls_min,' ||
    fail "CSV: header"
grep -Eq '^cublasSgemm_v2,main,report_prog,[0-9]+,2,4,4,4,[0-9.]+,[0-9.]+,[0-9.]+,' sum.csv ||
    fail "CSV: main's row"
grep -q ',modes: 0=tf32+shadow 1=fp32$' sum.csv ||
    fail "CSV: decisions differ (the ranks in rank order)"

set +e
"$tool" report --html page.html reports >html.out 2>html.err
rc=$?
set -e
[[ $rc == 2 ]] || fail "--html with a directory: status $rc, not 2"
grep -q -- '--html takes one report' html.err || fail "--html: message"
echo "job test: all checks passed"
