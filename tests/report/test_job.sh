#!/usr/bin/env bash
# One job's reports: two processes of report_prog started as Open MPI's
# mpirun starts ranks (OMPI_COMM_WORLD_* set), each writing its report
# through AMPSHIM_REPORT=DIR/rank-%r.json, rank 1 with its GEMMs kept FP32;
# then `ampshim report DIR` and `ampshim report FILE FILE --csv -`:
# - the reports' job objects (launcher, rank, local rank, size, id);
# - the summary: one line per rank, the totals, the slowest rank, each
#   site's spread across the ranks, the site whose decisions differ;
# - a file in the directory that is not a report is named and left out;
#   the summary's page (--html);
# - `ampshim calibrate -- mpirun -np 2 report_prog` (a launcher script as
#   mpirun starts ranks): one report_prog.policy from both ranks'
#   measurements, with which both ranks of the next run decide alike.
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
grep -Eq '^decisions differ at main \(report_prog\+0x[0-9a-f]+\) cublasSgemm_v2: modes: 0=tf32 1=fp32$' sum.out ||
    fail "summary: differing decisions"

"$tool" report --csv - reports/rank-1.json reports/rank-0.json >sum.csv \
    2>csv.err || fail "CSV: status"
head -1 sum.csv | grep -q '^api,function,module,offset,processes,calls_min,' ||
    fail "CSV: header"
grep -Eq '^cublasSgemm_v2,main,report_prog,[0-9]+,2,4,4,4,[0-9.]+,[0-9.]+,[0-9.]+,' sum.csv ||
    fail "CSV: main's row"
grep -q ',modes: 0=tf32 1=fp32$' sum.csv ||
    fail "CSV: decisions differ (the ranks in rank order)"

"$tool" report --html page.html reports >html.out 2>html.err ||
    fail "--html: status"
grep -q '<h1 id="heading">ampshim job: report_prog</h1>' page.html ||
    fail "--html: heading"
grep -q '<p id="job">2 processes (openmpi, job 4242, size 2).</p>' page.html ||
    fail "--html: job line"
grep -Eq '<tr><td>1</td><td>[^<]+</td><td>NVIDIA H100 SXM \(emulated\)</td><td>4</td><td>0</td><td>-</td><td>-</td><td>-</td><td>reports/rank-1.json</td></tr>' page.html ||
    fail "--html: rank 1's row"
grep -Eq '<li class="mark">main \(report_prog\+0x[0-9a-f]+\) cublasSgemm_v2: modes: 0=tf32 1=fp32</li>' page.html ||
    fail "--html: the differing decisions"
! grep -q '<script' page.html || fail "--html: a script"

# ---- ampshim calibrate -- mpirun -np 2 PROGRAM -------------------------------
# A launcher as mpirun is to its ranks: N copies, each with its rank in
# Open MPI's variables, the environment (LD_PRELOAD, AMPSHIM_*) inherited.
mkdir bin
cat >bin/mpirun <<'SH'
#!/usr/bin/env bash
[[ $1 == -np ]] || exit 2
n=$2
shift 2
for ((r = 0; r < n; r++)); do
    OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_LOCAL_RANK=$r \
        OMPI_COMM_WORLD_SIZE=$n "$@" &
done
status=0
for ((r = 0; r < n; r++)); do wait -n || status=1; done
exit $status
SH
chmod +x bin/mpirun
"$tool" calibrate --modes tf32,fp16 -- "$tmp/bin/mpirun" -np 2 "$prog" \
    --m 256 --n 128 --k 512 --calls 3 >cal.out 2>cal.err ||
    fail "calibrate under mpirun: status"
[[ -f report_prog.policy && ! -e mpirun.policy ]] ||
    fail "calibrate under mpirun: no report_prog.policy"
grep -Eq '^match exe "?report_prog"? build-id ' report_prog.policy ||
    fail "calibrate under mpirun: the policy does not match report_prog"
grep -q '^# Measured over the 2 processes of each run' report_prog.policy ||
    fail "calibrate under mpirun: the policy does not say 2 processes"
grep -Eq '^rule (tf32|fp16) verify 1 when .*caller "main"' report_prog.policy ||
    fail "calibrate under mpirun: no rule for main"
"$tool" policy check report_prog.policy >check.out 2>check.err ||
    fail "calibrate under mpirun: the policy does not check"
# The next run of both ranks with it: the same decisions on each.
mkdir next
"$tool" run --policy report_prog.policy --report 'next/rank-%r.json' -- \
    "$tmp/bin/mpirun" -np 2 "$prog" --m 256 --n 128 --k 512 --calls 3 \
    >next.out 2>next.err || fail "next run: status"
"$tool" report next >next-sum.out 2>next-sum.err || fail "next run: summary"
grep -Eq '^main \(report_prog\+0x[0-9a-f]+\) +cublasSgemm_v2 +2 +3/3/3 ' next-sum.out ||
    fail "next run: main in both ranks"
! grep -q '^decisions differ' next-sum.out ||
    fail "next run: the ranks decided differently"
echo "job test: all checks passed"
