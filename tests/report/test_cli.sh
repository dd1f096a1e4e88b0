#!/usr/bin/env bash
# The ampshim tool's command line, as a user meets it, on the emulator:
# - --version and -V: "ampshim VERSION" (meson's project version), also the
#   report's ampshim_version;
# - --help of the tool and of each command: a usage line, the options, an
#   exit status section, on stdout, status 0;
# - getopt_long parsing in every command: --opt=value and --opt value, --
#   ends the options, arguments after PROGRAM are PROGRAM's, an unknown
#   option, a missing value, an ambiguous abbreviation or a value given to
#   a flag named with a pointer to --help, and each command's status;
# - run and calibrate check before anything runs (status 125, the program
#   not started): the mode, the policy (its FILE:LINE:COL message), the
#   AMPSHIM_* settings, the report, trace, log and policy files' places,
#   an existing file without --force, the program; --force replaces;
# - report - reads standard input, --csv - and --html - write the CSV or
#   the page alone on standard output;
# - %p, %i, %h and %% in AMPSHIM_REPORT, AMPSHIM_TRACE and AMPSHIM_LOG_FILE
#   (and --report, which the tool names expanded);
# - AMPSHIM_LOG_LEVEL 0 to 5, AMPSHIM_QUIET=1 and run --quiet: not a byte
#   on stderr, the report still written.
# - run warns, once per library, about a program that holds a static copy
#   of cuBLAS or cuDNN, and runs it; a dynamically linked one gets no
#   warning;
# - SIGTERM to `ampshim run` goes to the program, which it waits for:
#   status 143, no process left behind; to `ampshim calibrate` too, which
#   then stops and removes its temporary directory.
# usage: test_cli.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3 VERSION
#                    STATIC_VENDOR
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 version=$6 static_vendor=$(realpath "$7")
tmp=$(mktemp -d /tmp/ampshim-cli-XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
unset $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$lib
# A sanitized build's runtime must come first in a preloaded child; the
# tool keeps LD_PRELOAD in front of the shim. Only the tool and the
# preloaded programs get it: the system's commands (hostname, python3)
# are not built with the sanitizer.
first=${AMP_TEST_PRELOAD_FIRST:-}
preload="${first:+$first }"
host=$(hostname)
cd "$tmp"

fail() {
    echo "cli test: $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; head -c 3000 "$f" >&2; }
    done
    exit 1
}

# t NAME [VAR=value...] -- ARGS...: the tool's stdout, stderr and status in
# NAME.out, NAME.err, NAME.rc; stdin from NAME.in when there is one.
t() {
    local name=$1
    shift
    local -a vars=()
    while [[ $1 != -- ]]; do vars+=("$1"); shift; done
    shift
    local in=/dev/null
    [[ -f $tmp/$name.in ]] && in=$tmp/$name.in
    set +e
    env LD_PRELOAD="$first" "${vars[@]}" "$tool" "$@" <"$in" \
        >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    set -e
}
rc() { cat "$tmp/$1.rc"; }
status() { [[ $(rc "$1") == "$2" ]] || fail "$1: status $(rc "$1"), not $2"; }
err_has() { grep -qF -- "$2" "$tmp/$1.err" || fail "$1: stderr lacks '$2'"; }
out_has() { grep -qF -- "$2" "$tmp/$1.out" || fail "$1: stdout lacks '$2'"; }
out_empty() { [[ ! -s $tmp/$1.out ]] || fail "$1: stdout is not empty"; }
err_empty() { [[ ! -s $tmp/$1.err ]] || fail "$1: stderr is not empty"; }
# A usage error: the message, the pointer to --help, nothing on stdout.
usage() {
    local name=$1 code=$2 command=$3 message=$4
    status "$name" "$code"
    err_has "$name" "$command: $message"
    err_has "$name" "Try '$command --help' for more information."
    out_empty "$name"
}
# A check that failed before the program: 125, the message, the marker
# file the program would have made not there.
refused() {
    local name=$1 message=$2
    status "$name" 125
    err_has "$name" "$message"
    [[ ! -e $tmp/ran ]] || fail "$name: the program ran"
}
key() {
    "$python" -c "import json, sys; print(json.load(open(sys.argv[1]))$2)" \
        "$1"
}
marker=(sh -c 'touch "$0"' "$tmp/ran")
small=(--calls 2 --m 64 --n 64 --k 64)

# ---- --version, --help ---------------------------------------------------------
for flag in --version -V; do
    t version -- "$flag"
    status version 0
    [[ $(cat "$tmp/version.out") == "ampshim $version" ]] ||
        fail "$flag: '$(cat "$tmp/version.out")', not 'ampshim $version'"
    err_empty version
done
t versioned -- run --mode fp16 --report "$tmp/v.json" -- "$prog" "${small[@]}"
status versioned 0
[[ $(key "$tmp/v.json" '["ampshim_version"]') == "$version" ]] ||
    fail "the report's ampshim_version is not $version"
echo "--version and -V: ampshim $version; the report's ampshim_version too"

t help -- --help
status help 0
out_has help "usage: ampshim [OPTIONS] COMMAND [ARGS...]"
for c in run report calibrate policy; do out_has help "  $c "; done
out_has help "-V, --version"
out_has help "exit status:"
for c in run report calibrate "policy check" "policy which"; do
    t help_cmd -- $c --help
    status help_cmd 0
    out_has help_cmd "usage: ampshim $c "
    out_has help_cmd "-h, --help"
    out_has help_cmd "exit status:"
    err_empty help_cmd
done
t help_run -- run -h
out_has help_run "--force"
out_has help_run "environment:"
out_has help_run "125 when nothing ran"
t help_policy -- policy --help
status help_policy 0
out_has help_policy "usage: ampshim policy COMMAND"
echo "--help: the tool, run, report, calibrate, policy, policy check, policy which"

# ---- Usage errors ------------------------------------------------------------
t none --
usage none 2 ampshim "no command given"
t top_unknown -- --foo
usage top_unknown 2 ampshim "unknown option '--foo'"
t bad_command -- frobnicate
usage bad_command 2 ampshim "unknown command 'frobnicate'"
t run_unknown -- run --foo -- "${marker[@]}"
usage run_unknown 125 "ampshim run" "unknown option '--foo'"
t run_unknown_eq -- run --foo=bar "${marker[@]}"
usage run_unknown_eq 125 "ampshim run" "unknown option '--foo'"
t run_short -- run -x "${marker[@]}"
usage run_short 125 "ampshim run" "unknown option '-x'"
t run_missing -- run --report
usage run_missing 125 "ampshim run" "option '--report' needs a value"
t run_dashdash -- run --report -- "${marker[@]}"
usage run_dashdash 125 "ampshim run" "option '--report' needs a value"
t run_empty -- run --report= "${marker[@]}"
usage run_empty 125 "ampshim run" "option '--report' needs a value, not an empty one"
t run_flag_value -- run --force=yes "${marker[@]}"
usage run_flag_value 125 "ampshim run" "option '--force' takes no value"
t run_noprog -- run --mode fp16
usage run_noprog 125 "ampshim run" "no program to run"
t cal_unknown -- calibrate --foo -- "${marker[@]}"
usage cal_unknown 2 "ampshim calibrate" "unknown option '--foo'"
t cal_missing -- calibrate -o
usage cal_missing 2 "ampshim calibrate" "option '-o' needs a value"
t cal_tolerance -- calibrate --tolerance=-1 -- "${marker[@]}"
usage cal_tolerance 2 "ampshim calibrate" "--tolerance needs a non-negative number"
t rep_unknown -- report --foo x.json
usage rep_unknown 2 "ampshim report" "unknown option '--foo'"
t rep_missing -- report x.json --csv
usage rep_missing 2 "ampshim report" "option '--csv' needs a value"
t rep_ambiguous -- report --h x.json
usage rep_ambiguous 2 "ampshim report" "option '--h' is ambiguous (--html, --help)"
t rep_two -- report a.json b.json
status rep_two 1
err_has rep_two "ampshim report: a.json: No such file or directory"
t rep_two_html -- report --html p.html a.json b.json
status rep_two_html 1
err_has rep_two_html "ampshim report: b.json: No such file or directory"
mkdir -p "$tmp/empty"
(cd "$tmp/empty" && t rep_none XDG_STATE_HOME="$tmp/empty/state" -- report)
status rep_none 1
err_has rep_none "ampshim report: no report named, and no ampshim-*.json in the working directory nor in $tmp/empty/state/ampshim"
t check_unknown -- policy check --strict x.policy
usage check_unknown 2 "ampshim policy check" "unknown option '--strict'"
[[ ! -e $tmp/ran ]] || fail "a usage error ran the program"
echo "usage errors: named, with the pointer to --help; run 125, the others 2"

# ---- Options: both forms, --, the program's own ------------------------------
t eq -- run --mode=fp16 --report="$tmp/eq.json" "$prog" "${small[@]}"
status eq 0
t sp -- run --mode fp16 --report "$tmp/sp.json" -- "$prog" "${small[@]}"
status sp 0
for r in eq sp; do
    [[ $(key "$tmp/$r.json" '["policy"]["mode"]') == fp16 ]] ||
        fail "$r: the report's mode is not fp16"
    err_has $r "ampshim: report: $tmp/$r.json"
done
# After PROGRAM (with or without --), options are PROGRAM's.
args=(sh -c 'printf "<%s>" "$@"' prog --mode fp8 --report --foo -- -x)
t own -- run --report off "${args[@]}"
status own 0
[[ $(cat "$tmp/own.out") == "<--mode><fp8><--report><--foo><--><-x>" ]] ||
    fail "own: the program got '$(cat "$tmp/own.out")'"
t own2 -- run --report off -- "${args[@]}"
[[ $(cat "$tmp/own2.out") == "<--mode><fp8><--report><--foo><--><-x>" ]] ||
    fail "own2: the program got '$(cat "$tmp/own2.out")'"
t own_status -- run --report off -- sh -c 'exit 7'
status own_status 7
# A unique abbreviation, as getopt_long takes it.
t abbrev -- run --mo fp16 --rep "$tmp/ab.json" -- "$prog" "${small[@]}"
status abbrev 0
[[ $(key "$tmp/ab.json" '["policy"]["mode"]') == fp16 ]] ||
    fail "abbrev: the report's mode is not fp16"
echo "--opt=value and --opt value alike; after PROGRAM, PROGRAM's arguments"

# ---- run: checks before the program --------------------------------------------
printf 'default fp32\nrule fp16 when\n' >bad.policy
printf 'set tolerance 1e-2\nrule tf32 when gemm\ndefault fp32\n' >good.policy
t mode -- run --mode fp8 "${marker[@]}"
refused mode "ampshim run: --mode fp8: not a mode; the modes: fp32, fp16,"
# A mode one swap away from a known one: its name suggested.
t mode_near -- run --mode fp61 "${marker[@]}"
refused mode_near "ampshim run: --mode fp61: not a mode; did you mean 'fp16'?; the modes: fp32,"
# A policy file that is not there: its path and why, no line or column.
t policy_missing -- run --policy "$tmp/no-such.policy" "${marker[@]}"
refused policy_missing "ampshim run: $tmp/no-such.policy: cannot read: No such file"
! grep -q ":0:0:" "$tmp/policy_missing.err" ||
    fail "policy_missing: a line and column 0:0 for a file-level error"
t mode_env AMPSHIM_MODE=fp9 -- run "${marker[@]}"
refused mode_env "ampshim run: AMPSHIM_MODE=\"fp9\" is not one of: fp32,"
t setting AMPSHIM_SNAPSHOT=soon -- run "${marker[@]}"
refused setting "ampshim run: AMPSHIM_SNAPSHOT=\"soon\" is not a number of seconds"
t policy -- run --policy bad.policy "${marker[@]}"
refused policy "ampshim run: bad.policy:2:1: expected"
t policy_mode -- run --mode fp16 --policy bad.policy "${marker[@]}"
refused policy_mode "ampshim run: bad.policy:2:1: expected"
t policy_env AMPSHIM_POLICY=bad.policy -- run "${marker[@]}"
refused policy_env "ampshim run: bad.policy:2:1: expected"
mkdir -p conf/ampshim/policies
cp bad.policy conf/ampshim/policies/a.policy
t policy_dir XDG_CONFIG_HOME="$tmp/conf" -- run "${marker[@]}"
refused policy_dir "ampshim run: $tmp/conf/ampshim/policies/a.policy:2:1: expected"
err_has policy_dir "ampshim run: $tmp/conf/ampshim/policies/a.policy: it has no match line, so the file with an error applies to every program; fix it, or name a policy with --policy"
# A broken file whose match line accepts the program refuses it; one for
# another program is passed over, and the program runs.
printf 'match exe *\nrule fp61\ndefault fp32\n' >conf/ampshim/policies/a.policy
t policy_match XDG_CONFIG_HOME="$tmp/conf" -- run "${marker[@]}"
refused policy_match "ampshim run: $tmp/conf/ampshim/policies/a.policy:2:6: unknown action 'fp61'; did you mean 'fp16'?"
err_has policy_match "ampshim run: $tmp/conf/ampshim/policies/a.policy:1: this match line accepts"
printf 'match exe no-such-program\nrule fp61\ndefault fp32\n' \
    >conf/ampshim/policies/a.policy
t policy_other XDG_CONFIG_HOME="$tmp/conf" -- run --report off "${marker[@]}"
status policy_other 0
[[ -e $tmp/ran ]] || fail "policy_other: the program did not run"
rm "$tmp/ran" conf/ampshim/policies/a.policy
t report_dir -- run --report "$tmp/no/r.json" "${marker[@]}"
refused report_dir "ampshim run: --report $tmp/no/r.json: the directory $tmp/no does not exist"
t report_notdir -- run --report "$tmp/bad.policy/r.json" "${marker[@]}"
refused report_notdir "$tmp/bad.policy is not a directory"
mkdir adir
t report_isdir -- run --force --report adir "${marker[@]}"
refused report_isdir "ampshim run: --report adir: adir is a directory"
t report_env AMPSHIM_REPORT="$tmp/no/%p.json" -- run "${marker[@]}"
refused report_env "ampshim run: AMPSHIM_REPORT=$tmp/no/%p.json: the directory $tmp/no does not exist"
t trace_dir -- run --trace "$tmp/no/t.json" "${marker[@]}"
refused trace_dir "ampshim run: --trace $tmp/no/t.json: the directory $tmp/no does not exist"
t log_dir AMPSHIM_LOG_FILE="$tmp/no/%p.log" -- run "${marker[@]}"
refused log_dir "ampshim run: AMPSHIM_LOG_FILE=$tmp/no/%p.log: the directory $tmp/no does not exist"
echo kept >kept.json
t exists -- run --report kept.json "${marker[@]}"
refused exists "ampshim run: --report kept.json: kept.json exists; --force replaces it"
[[ $(cat kept.json) == kept ]] || fail "exists: kept.json changed"
echo kept >kept-trace.json
t exists_trace -- run --trace kept-trace.json "${marker[@]}"
refused exists_trace "kept-trace.json exists; --force replaces it"
t noprog -- run --report off -- "$tmp/no-such-program"
refused noprog "ampshim: cannot run $tmp/no-such-program: No such file or directory; nothing ran"
t nolib AMPSHIM_LIBRARY="$tmp/no.so" -- run --report off "${marker[@]}"
refused nolib "ampshim: cannot find libampshim.so ($tmp/no.so); set AMPSHIM_LIBRARY"
# A directory the tool's user cannot write into (as an unprivileged user
# when the test runs as root, who can write anywhere).
mkdir ro && chmod 555 ro
as_user=()
if [[ $(id -u) == 0 ]]; then
    command -v setpriv >/dev/null &&
        as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if [[ $(id -u) != 0 || ${#as_user[@]} != 0 ]]; then
    chmod 777 "$tmp"
    set +e
    "${as_user[@]}" env LD_PRELOAD="$first" AMPSHIM_LIBRARY="$lib" \
        "$tool" run --report ro/r.json \
        "${marker[@]}" >ro.out 2>ro.err
    echo $? >ro.rc
    set -e
    refused ro "ampshim run: --report ro/r.json: cannot create files in ro: Permission denied"
    # The default report goes to the working directory.
    set +e
    (cd ro && "${as_user[@]}" env LD_PRELOAD="$first" AMPSHIM_LIBRARY="$lib" "$tool" run \
        "${marker[@]}") >ro_cwd.out 2>ro_cwd.err
    echo $? >ro_cwd.rc
    set -e
    refused ro_cwd "ampshim run: the report's default place (--report FILE or off): cannot create files in $tmp/ro: Permission denied"
    echo "run: an unwritable directory refused"
else
    echo "run: the unwritable directory not checked (root, no setpriv)"
fi
# A good policy and --force: the program runs, the file is replaced.
t force -- run --policy good.policy --report kept.json --force -- \
    "$prog" "${small[@]}"
status force 0
[[ $(key kept.json '["policy"]["source"]') == AMPSHIM_POLICY ]] ||
    fail "force: kept.json is not the new report"
echo "run: 125 before the program for each check; --force replaces the report"

# ---- calibrate: checks before the runs ---------------------------------------------
echo kept >kept.policy
t cal_exists -- calibrate -o kept.policy -- "${marker[@]}"
refused cal_exists "ampshim calibrate: -o kept.policy: kept.policy exists; --force replaces it"
[[ $(cat kept.policy) == kept ]] || fail "cal_exists: kept.policy changed"
t cal_dir -- calibrate --output="$tmp/no/p.policy" "${marker[@]}"
refused cal_dir "ampshim calibrate: -o $tmp/no/p.policy: the directory $tmp/no does not exist"
t cal_setting AMPSHIM_LOG_LEVEL=9 -- calibrate -o new.policy "${marker[@]}"
refused cal_setting "ampshim calibrate: AMPSHIM_LOG_LEVEL=\"9\" is not one of: off, error, warn, info, debug, or 0 (off) to 5 (everything)"
t cal_noprog -- calibrate -o new.policy "$tmp/no-such-program"
refused cal_noprog "ampshim: cannot run $tmp/no-such-program: No such file or directory; nothing ran"
t cal_modes -- calibrate --modes fp16,fp8 "${marker[@]}"
usage cal_modes 2 "ampshim calibrate" "--modes: not a candidate"
echo "calibrate: 125 before the runs for each check, 2 for a usage error"

# ---- report: standard input, standard output -----------------------------------
t rep_file -- report "$tmp/sp.json" --csv "$tmp/sp.csv"
status rep_file 0
out_has rep_file "main (report_prog+0x"
cp "$tmp/sp.json" "$tmp/rep_stdin.in"
t rep_stdin -- report -
status rep_stdin 0
cmp -s "$tmp/rep_file.out" "$tmp/rep_stdin.out" ||
    fail "report -: not the table of report FILE"
t rep_csv -- report --csv - "$tmp/sp.json"
status rep_csv 0
cmp -s "$tmp/sp.csv" "$tmp/rep_csv.out" ||
    fail "report --csv -: stdout is not the CSV alone"
cp "$tmp/sp.json" "$tmp/rep_csv_stdin.in"
t rep_csv_stdin -- report --csv=- -
cmp -s "$tmp/sp.csv" "$tmp/rep_csv_stdin.out" ||
    fail "report --csv=- -: stdout is not the CSV alone"
t rep_html -- report "$tmp/sp.json" --html -
status rep_html 0
[[ $(head -c 15 "$tmp/rep_html.out") == "<!DOCTYPE html>" ]] ||
    fail "report --html -: stdout does not start with the page"
! grep -qF "total:" "$tmp/rep_html.out" || fail "report --html -: a table"
t rep_both -- report --html - --csv - "$tmp/sp.json"
usage rep_both 2 "ampshim report" "--html - and --csv - both write to standard output"
echo '{"schema": "something else"}' >"$tmp/rep_bad.in"
t rep_bad -- report -
status rep_bad 1
err_has rep_bad "ampshim report: standard input: not an ampshim report"
echo "report: - reads standard input; --csv - and --html - alone on stdout"

# ---- %p, %i, %h, %% -------------------------------------------------------------
# The program run directly: its pid is the one in the names.
env AMPSHIM_MODE=fp16 AMPSHIM_REPORT="$tmp/r-%p-%h-100%%.json" \
    AMPSHIM_TRACE="$tmp/t-%i.json" AMPSHIM_LOG_FILE="$tmp/l-%h-%p.log" \
    LD_PRELOAD="$preload$lib" "$prog" "${small[@]}" >esc.out 2>esc.err &
pid=$!
wait "$pid" || fail "escapes: status $?"
for f in "r-$pid-$host-100%.json" "t-$pid.json" "l-$host-$pid.log"; do
    [[ -s $tmp/$f ]] || fail "escapes: no $f"
done
grep -qF "summary cublasSgemm_v2 calls=2" "l-$host-$pid.log" ||
    fail "escapes: the log has no summary"
[[ $(key "r-$pid-$host-100%.json" '["schema"]') == ampshim-report ]] ||
    fail "escapes: the report"
t esc_run -- run --mode fp16 --report "$tmp/run-%p.json" -- "$prog" "${small[@]}"
status esc_run 0
named=$(sed -n 's/^ampshim: report: \([^ ]*\) .*/\1/p' "$tmp/esc_run.err")
[[ $named =~ ^$tmp/run-[0-9]+\.json$ && -s $named ]] ||
    fail "esc_run: the tool named '$named'"
# Too long once expanded: a warning, and no file (the report, the trace)
# or the log on stderr; the tool refuses before the run.
long=$(printf '%%p%.0s' {1..2000})
env AMPSHIM_MODE=fp16 AMPSHIM_REPORT="$tmp/$long" AMPSHIM_TRACE="$tmp/$long" \
    AMPSHIM_LOG_FILE="$tmp/$long" LD_PRELOAD="$preload$lib" "$prog" \
    "${small[@]}" >long.out 2>long.err || fail "long: status $?"
err_has long "warning: AMPSHIM_REPORT is too long once expanded; no report is written"
err_has long "warning: AMPSHIM_TRACE is too long once expanded; no trace is written"
err_has long "warning: AMPSHIM_LOG_FILE is too long once expanded; logging to stderr"
err_has long "report: not written"
t long_run -- run --report "$tmp/$long" "${marker[@]}"
refused long_run "ampshim run: --report $tmp/$long: too long once expanded"
echo "escapes: %p, %i, %h and %% in the report, trace and log file names; too long: a warning"

# ---- Log levels, quiet ----------------------------------------------------------
# A bad value warns at level 2 (warn), not at 0; 3 (info) logs each call.
shim() {
    local name=$1
    shift
    env AMPSHIM_MODE=fp16 AMPSHIM_REPORT=off AMPSHIM_SCRATCH_MAX=lots "$@" \
        LD_PRELOAD="$preload$lib" "$prog" "${small[@]}" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "$name: status $?"
}
shim level0 AMPSHIM_LOG_LEVEL=0
! grep -qF AMPSHIM_SCRATCH_MAX level0.err || fail "level 0: a warning"
err_has level0 "summary cublasSgemm_v2 calls=2"
shim level2 AMPSHIM_LOG_LEVEL=2
err_has level2 "warning: AMPSHIM_SCRATCH_MAX=\"lots\""
! grep -qF "call cublasSgemm_v2" level2.err || fail "level 2: call lines"
shim level3 AMPSHIM_LOG_LEVEL=3
[[ $(grep -c "call cublasSgemm_v2" level3.err) == 2 ]] ||
    fail "level 3: not one line per call"
shim quiet AMPSHIM_QUIET=1 AMPSHIM_LOG_LEVEL=5
err_empty quiet
grep -q '^report_prog calls=2' quiet.out || fail "quiet: no program output"
shim quiet_file AMPSHIM_QUIET=1 AMPSHIM_LOG_FILE="$tmp/quiet.log"
err_empty quiet_file
grep -qF "warning: AMPSHIM_SCRATCH_MAX" quiet.log ||
    fail "quiet with a log file: no warning in the file"
t run_quiet -- run -q --mode fp16 --report "$tmp/q.json" "$prog" "${small[@]}"
status run_quiet 0
err_empty run_quiet
out_has run_quiet "report_prog calls=2"
[[ $(key "$tmp/q.json" '["totals"]["converted"]') == 2 ]] ||
    fail "run --quiet: the report"
echo "levels: 0 no warning, 2 warnings, 3 each call; AMPSHIM_QUIET=1 and run -q: empty stderr, the report written"

# A static copy of cuBLAS and cuDNN: one warning each, and the program runs.
t static -- run --report off "$static_vendor"
status static 0
out_has static "static_vendor: 0 ok"
err_has static "ampshim run: warning: $static_vendor has cuBLAS linked in statically (cublasCreate_v2 and 1 more of its functions are defined in the program)"
err_has static "has cuDNN linked in statically (cudnnCreate is defined in the program)"
err_has static "link the shared library (-lcublas) to have them converted"
[[ $(grep -c 'linked in statically' "$tmp/static.err") == 2 ]] ||
    fail "static: not one warning per library"
t dynamic -- run --report off "$prog" "${small[@]}"
! grep -qF 'linked in statically' "$tmp/dynamic.err" ||
    fail "dynamic: a static-copy warning for a linked program"
echo "static copies: a warning per library, the program run; none for a linked program"

# Where the report goes by default: a bare preload writes it to the state
# directory (made when missing; nothing in the working directory), `ampshim
# run` to the working directory and names it there; `report` alone reads
# the latest of the two places.
mkdir -p "$tmp/wd"
(cd "$tmp/wd" && env AMPSHIM_MODE=fp16 XDG_STATE_HOME="$tmp/xdg" \
    LD_PRELOAD="$preload$lib" "$prog" "${small[@]}" \
    >"$tmp/bare.out" 2>"$tmp/bare.err") || fail "bare: status $?"
bare=$(ls "$tmp"/xdg/ampshim/ampshim-report_prog-*.json 2>/dev/null || true)
[[ -n $bare ]] || fail "bare preload: no report in \$XDG_STATE_HOME/ampshim"
err_has bare "report: $bare"
! ls "$tmp"/wd/ampshim-*.json >/dev/null 2>&1 ||
    fail "bare preload: a report in the working directory"
(cd "$tmp/wd" && t rep_latest_bare XDG_STATE_HOME="$tmp/xdg" -- report)
status rep_latest_bare 0
err_has rep_latest_bare "ampshim report: the latest report: $bare"
out_has rep_latest_bare "cublasSgemm_v2"
(cd "$tmp/wd" && t run_default XDG_STATE_HOME="$tmp/xdg" -- run --mode fp16 \
    "$prog" "${small[@]}")
status run_default 0
ran=$(cd "$tmp/wd" && ls ampshim-report_prog-*.json 2>/dev/null || true)
[[ -n $ran ]] || fail "ampshim run: no report in the working directory"
err_has run_default "ampshim: report: $ran (ampshim report $ran)"
(cd "$tmp/wd" && t rep_latest_run XDG_STATE_HOME="$tmp/xdg" -- report)
status rep_latest_run 0
err_has rep_latest_run "ampshim report: the latest report: $ran"
echo "default places: bare preload -> \$XDG_STATE_HOME/ampshim, run -> the working directory, report alone -> the latest"

# A run that intercepted nothing says so and why that may be; not with
# --report off (nothing to tell by) or --quiet.
(cd "$tmp/wd" && t nothing -- run -- /bin/sh -c 'exit 3')
status nothing 3
err_has nothing "ampshim run: the shim saw no cuBLAS, cuBLASLt or cuDNN call of the program (no report was written; it exited with status 3)"
err_has nothing "may have a static copy of them"
(cd "$tmp/wd" && t nothing_off -- run --report off -- /bin/true)
! grep -qF "saw no cuBLAS" "$tmp/nothing_off.err" || fail "nothing_off: told"
(cd "$tmp/wd" && t nothing_quiet -- run -q -- /bin/true)
err_empty nothing_quiet
# One that a signal killed died; that is not "no call was seen" (SIGKILL,
# which no sanitizer runtime preloaded into the shell can catch).
(cd "$tmp/wd" && t died -- run -- /bin/sh -c 'kill -KILL $$')
status died 137
err_has died "ampshim run: the program died (killed by signal 9, "
! grep -qF "saw no cuBLAS" "$tmp/died.err" || fail "died: told no call"
echo "a run that intercepted nothing: said, with the likely reasons"

# term NAME SUBCOMMAND [VAR=VALUE...] -- ARGS...: `ampshim SUBCOMMAND
# ARGS` started, SIGTERM sent to it once its program runs (as a
# scheduler's `kill PID`): the program gets it, the tool waits for it and
# exits with status 143 (128 + SIGTERM); no process is left.
term() {
    local name=$1 sub=$2 tool_pid child code
    local -a vars=()

    shift 2
    while [[ $1 != -- ]]; do
        vars+=("$1")
        shift
    done
    shift
    env LD_PRELOAD="$first" "${vars[@]}" "$tool" "$sub" "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
    tool_pid=$!
    child=
    for _ in $(seq 50); do
        child=$(pgrep -P "$tool_pid" || true)
        [[ -n $child ]] && break
        sleep 0.1
    done
    [[ -n $child ]] || fail "$name: the program did not start"
    kill -TERM "$tool_pid"
    set +e
    wait "$tool_pid"
    code=$?
    set -e
    sleep 0.2
    if kill -0 "$child" 2>/dev/null; then
        kill -KILL "$child"
        fail "$name: the program outlived ampshim $sub (status $code)"
    fi
    [[ $code == 143 ]] || fail "$name: status $code, not 143 (128 + SIGTERM)"
}

term term run -- --report off -- sleep 30
echo "SIGTERM to ampshim run: passed to the program, status 143, nothing left"

# To `ampshim calibrate`: the calibration stops too (no policy) and
# removes its temporary directory (under TMPDIR).
mkdir "$tmp/caltmp"
term calterm calibrate TMPDIR="$tmp/caltmp" -- \
    -o "$tmp/never.policy" -- sleep 30
[[ -z $(ls -A "$tmp/caltmp") ]] ||
    fail "calterm: left in TMPDIR: $(ls -A "$tmp/caltmp")"
[[ ! -e $tmp/never.policy ]] || fail "calterm: a policy was written"
grep -qF "ampshim calibrate: stopped by Terminated: no policy written" \
    "$tmp/calterm.err" || fail "calterm: the message"
echo "SIGTERM to ampshim calibrate: passed to the program, status 143," \
     "its temporary directory removed"
