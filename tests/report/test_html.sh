#!/usr/bin/env bash
# The page of `ampshim report --html` as a browser shows it: reports of
# real runs on the emulator (sites demoted over the tolerance, nothing
# converted under --mode fp32, a broken policy, a run that converted and
# gained) and two written by hand (a version-1 snapshot with hostile
# names, no device and fallbacks; a version-2 report with the command
# line, host, fp32_reasons and a reason for an unknown FP32 time), and
# the summary of a job's two reports (ranks started as mpirun starts
# them), each rendered with `ampshim report --html` and opened in headless
# Chromium:
# - no console message (the page has no script; a load it attempted, a
#   parse error or an exception would log one), no <script> element, no
#   external resource in the file;
# - the metadata block, the captions, the labelled reference lines, the
#   per-shape table, the why-FP32 breakdown and the what-to-do-next items
#   that report calls for, by their exact text in the rendered DOM;
# - the sites and shapes tables fit 1200 and 1400 pixels: nothing to
#   scroll sideways;
# - screenshots 800 and 1600 pixels wide, kept in OUT_DIR (printed).
# Chromium comes from scripts/setup.sh; without it the test fails.
# usage: test_html.sh REPORT_PROG LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#                     CHECK_HTML SRC_DIR OUT_DIR
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 check=$(realpath "$6") src=$(realpath "$7")
out=$8
tmp=$(mktemp -d /tmp/ampshim-html-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$lib
first=${AMP_TEST_PRELOAD_FIRST:-}
rm -rf "$out"
mkdir -p "$out"
cd "$tmp"

fail() {
    echo "html test: $*" >&2
    exit 1
}

chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] ||
    fail "no chromium on PATH: scripts/setup.sh installs Debian's chromium"

# browse NAME ARGS...: headless Chromium on OUT/NAME.html, its own
# profile, its log in NAME.*.log.
browse() {
    local name=$1 log=$2
    shift 2
    timeout 120 "$chromium" --headless=new --disable-gpu --no-sandbox \
        --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
        --hide-scrollbars "$@" "file://$out/$name.html" 2>"$log"
}

# page NAME [REPORTS]: renders OUT/NAME.json (or REPORTS: a job's
# directory), checks it against NAME.expect (lines of check_html.py) and
# takes the screenshots.
page() {
    local name=$1 from=${2:-$out/$1.json} w
    env LD_PRELOAD="$first" "$tool" report "$from" \
        --html "$out/$name.html" >"$name.table" 2>"$name.err" ||
        { cat "$name.err" >&2; fail "$name: ampshim report --html failed"; }
    if grep -nE '<[^>]*[[:space:]](src|href|xlink:href)=|url\(|@import' \
            "$out/$name.html" >&2; then
        fail "$name: the page refers to something outside it"
    fi
    browse "$name" "$out/$name.dom.log" --dump-dom >"$out/$name.dom" ||
        fail "$name: chromium --dump-dom failed (log: $out/$name.dom.log)"
    "$python" "$check" "$out/$name.dom" "$out/$name.dom.log" \
        "$name.expect" || fail "$name: the rendered page is not as expected"
    for w in 800 1600; do
        browse "$name" "$out/$name-$w.log" --window-size="$w,3000" \
            --screenshot="$out/$name-$w.png" >/dev/null ||
            fail "$name: the $w px screenshot failed"
        [[ -s $out/$name-$w.png ]] || fail "$name: no $w px screenshot"
        "$python" "$check" "$out/$name.dom" "$out/$name-$w.log" \
            /dev/null || fail "$name: console messages at $w px"
        echo "screenshot: $out/$name-$w.png"
    done
    # Read at 1200 and 1400 pixels, the sites and shapes tables fit: no
    # sideways scrolling. Measured on a copy with a script that writes
    # each table's overflow into the DOM (the page itself has none).
    for w in 1200 1400; do
        sed 's|</body>|<script>document.body.setAttribute("data-overflow", Array.from(document.querySelectorAll("#sites .scroll, #shapes .scroll")).map(e => e.scrollWidth - e.clientWidth).join(","))</script></body>|' \
            "$out/$name.html" >"$tmp/width.html"
        got=$(timeout 120 "$chromium" --headless=new --disable-gpu \
            --no-sandbox --user-data-dir="$tmp/profile" --hide-scrollbars \
            --window-size="$w,3000" --dump-dom "file://$tmp/width.html" \
            2>/dev/null | grep -o 'data-overflow="[^"]*"' || true)
        [[ -n $got && ! $got =~ [1-9] ]] ||
            fail "$name: at $w px a table scrolls sideways ($got pixels)"
    done
    echo "$name: the page renders with what it should say"
}

# The checker itself: a page with a console error and an exception must
# fail it, else the console check proves nothing.
cat >"$out/console_error.html" <<'EOF'
<!DOCTYPE html><html><body><p id="x">x</p>
<script>console.error("deliberate"); undefined_function();</script>
</body></html>
EOF
browse console_error "$tmp/console.log" --dump-dom >"$tmp/console.dom" ||
    fail "chromium --dump-dom failed on a plain page"
printf 'x\tx\n' >"$tmp/console.expect"
if "$python" "$check" "$tmp/console.dom" "$tmp/console.log" \
        "$tmp/console.expect" 2>"$tmp/console.err"; then
    fail "check_html.py passed a page that logs a console error"
fi
grep -q 'console message:.*deliberate' "$tmp/console.err" ||
    fail "check_html.py did not name the console error"
grep -q 'console message:.*undefined_function' "$tmp/console.err" ||
    fail "check_html.py did not name the uncaught exception"
rm -f "$out/console_error.html"
echo "check_html.py fails a page with a console error or an exception"

run() {
    env LD_PRELOAD="$first" "$tool" run "$@" >/dev/null 2>"$tmp/run.err" ||
        { cat "$tmp/run.err" >&2; fail "ampshim run $* failed"; }
}

# Sections every page has, with their captions.
common() {
    cat <<'EOF'
meta	Program
meta	Command line
meta	Host
meta	Policy
meta	Why this policy
meta	Generated
meta	Device
meta	Times
meta	ampshim
meta	Report
chart-saved	Each bar is a site's FP32 time minus its time under the shim
chart-speedup	FP32 time over the time under the shim (blended
chart-error	The largest relative error (max norm) of a site's shadow calls
chart-time	Per site, grey: what the calls with a known FP32 time would have taken in FP32
shapes	One row per problem shape at each site
shapes	site shape calls converted FP32 and why blended speedup steady-state speedup error delivered / tolerance
sites	site api calls converted shadow mode FP32 ms actual ms speedup steady saved ms error delivered tolerance status
why-fp32	The calls at the sites that ran FP32
next	What to do next
#script	0
EOF
}

# The largest relative error of a site's shadow calls (SITE) or of one of
# its shapes (SITE SHAPE) in report JSON, printed with FORMAT: the page is
# checked against the run's own figures (the emulator's FP32 products, and
# so the errors' last digits, are those of the CPU's BLAS kernels).
err() {
    "$python" - "$@" <<'PY'
import json, sys
path, fmt, site = sys.argv[1:4]
shape = sys.argv[4] if len(sys.argv) > 4 else None
for s in json.load(open(path))['sites']:
    if s['function'] != site:
        continue
    if shape is None:
        print(fmt % s['errors']['max_rel'])
    for sh in s['shapes']:
        if sh['shape'] == shape:
            print(fmt % sh['errors']['max_rel'])
PY
}

# The speedup of one shape of a site in report JSON, as the page shows it
# (its last digits follow the modelled times of the shim's own kernels).
speed() {
    "$python" - "$@" <<'PY'
import json, sys
path, site, shape = sys.argv[1:4]
for s in json.load(open(path))['sites']:
    for sh in s['shapes']:
        if s['function'] == site and sh['shape'] == shape:
            print("%.2fx" % sh['time']['speedup'])
PY
}

# ---- Demoted: a tolerance no FP16 product meets ----------------------------------
printf 'set tolerance 1e-9\nrule fp16 verify 1 when gemm\ndefault fp32\n' \
    >demote.policy
run --policy demote.policy --report "$out/demoted.json" -- "$prog" \
    --calls 4 --m 128 --n 128 --k 128 --m2 64 --n2 64 --k2 64
d=$out/demoted.json
e6=$(err "$d" %.6g main) e3=$(err "$d" %.3g main)
s128=$(err "$d" %.2e main '128x128x128 NN')
s64=$(err "$d" %.2e second_site '64x64x64 NN')
s32=$(err "$d" %.2e second_site '64x64x32 NN')
v128=$(speed "$d" main '128x128x128 NN')
v64=$(speed "$d" second_site '64x64x64 NN')
v32=$(speed "$d" second_site '64x64x32 NN')
{
    common
    cat <<EOF
meta	AMPSHIM_POLICY: demote.policy, tolerance 1.0e-09
meta	AMPSHIM_POLICY=demote.policy (match lines are not consulted)
meta	NVIDIA H100 SXM (emulated)
meta	modelled by the CPU emulator (NVIDIA H100 SXM), not measured on a GPU
meta	complete: written at exit (schema version
chart-speedup	1.0x = FP32 speed
chart-error	tolerance 1.0e-09
chart-error	max rel err: $e6 $e3 DEMOTED
verdict	nothing to gain here: in steady state the calls run as fast as FP32 (1.00x)
verdict	their errors measured beside FP32 went over the tolerance, so they were put back to FP32
summary	8 calls at 2 sites, 1 converted (their converted results reached the program), 3 measured in shadow (the program got FP32's results)
sites	DEMOTED: shadow max_rel_err=$e3 exceeds the policy's tolerance 1e-09
shapes	main (report_prog+0x
shapes	128x128x128 NN 4 1 2 (demoted) $v128 1.00x $s128 / 1.0e-09 OVER
shapes	second_site (report_prog+0x
shapes	64x64x64 NN 2 0 1 (demoted) $v64 1.00x exactly FP32 / 1.0e-09 (its candidate was over)
shapes	shadow: fp16 candidate, max rel err $s64 in 1 call measured beside FP32 (its result discarded)
shapes	second_site (report_prog+0x
shapes	64x64x32 NN 2 0 1 (demoted) $v32 1.00x exactly FP32 / 1.0e-09 (its candidate was over)
shapes	shadow: fp16 candidate, max rel err $s32 in 1 call measured beside FP32 (its result discarded)
why-fp32	demoted 4 100.0% 2 the shape's shadow error at the site went over the tolerance
next	main (report_prog+0x
next	was demoted to FP32: shadow max_rel_err=$e3 exceeds the policy's tolerance 1e-09. Keep it FP32 with rule fp32 when caller "main", or try the FP32-accurate split with rule tf32x3 verify 2 when caller "main" (fp16x3 on a GPU without TF32), placed above the rule that converts it.
next	second_site (report_prog+0x
next	was demoted to FP32
next	rule tf32x3 verify 2 when caller "second_site"
!next	Converted calls without an FP32 time
!next	Nothing to change
coverage	FP32, converted 1
coverage	FP32 kept: shadow runs 3
EOF
} >demoted.expect
page demoted

# ---- Nothing converted: --mode fp32 ----------------------------------------------
run --mode fp32 --report "$out/fp32.json" -- "$prog" --calls 4 \
    --m 128 --n 128 --k 128
{
    common
    cat <<'EOF'
meta	AMPSHIM_MODE, mode fp32, tolerance -
summary	4 calls at 1 site, 0 converted (their converted results reached the program), 0 measured in shadow
chart-speedup	main (report_prog+0x
chart-speedup	stayed FP32: mode 4
chart-error	The policy sets no tolerance: errors are measured, never acted on.
shapes	main (report_prog+0x
shapes	128x128x128 NN 4 0 4 (mode) - - exactly FP32 / -
verdict	nothing to gain here: no converted result reached the program (4 calls ran FP32): the mode asked for is fp32
summary	FP32 - ms, actual - ms, saved - ms, speedup -
why-fp32	mode 4 100.0% 1 the mode is fp32 (AMPSHIM_MODE or the policy's)
next	Nothing was converted: the mode is fp32 (AMPSHIM_MODE overrides any policy). Run with a converting mode (ampshim run --mode fp16 -- PROGRAM) or a policy whose rules convert.
!next	Nothing to change
!next	demoted
EOF
} >fp32.expect
page fp32

# ---- Nothing converted: the policy file has an error -----------------------------
printf 'rule fp16 when gemm and\ndefault fp32\n' >broken.policy
env LD_PRELOAD="${first:+$first }$lib" AMPSHIM_POLICY=broken.policy \
    AMPSHIM_REPORT="$out/broken.json" "$prog" --calls 2 --m 64 --n 64 \
    --k 64 >/dev/null 2>"$tmp/broken.err" ||
    { cat "$tmp/broken.err" >&2; fail "the run with a broken policy failed"; }
{
    common
    cat <<'EOF'
meta	BROKEN: nothing was converted
verdict	nothing to gain here: the policy file has an error
next	Nothing was converted: the policy file has an error (
next	Fix it, ampshim policy check FILE says where, and run again.
!next	Nothing to change
EOF
} >broken.expect
page broken

# ---- Converted and faster: the built-in policy on large products -----------------
# (auto: how many of the first calls run in shadow, measuring candidates,
# and how many FP32 while it awaits their results, depends on when their
# results are harvested.)
run --report "$out/converted.json" -- "$prog" --calls 24 --m 1024 --n 1024 \
    --k 1024
tf32_err=$("$python" -c 'import json, sys
for c in json.load(open(sys.argv[1]))["sites"][0]["shapes"][0]["auto"]["candidates"]:
    if c["mode"] == "tf32":
        print("%.1e" % c["max_rel"])' "$out/converted.json")
# The calls whose converted result reached the program, and those measured
# in shadow: the page counts them apart.
read -r conv shadow steady < <("$python" -c 'import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["delivered"], t["shadow"], "%.2f" % t["steady_speedup"])' \
    "$out/converted.json")
waited=$((24 - conv - shadow))
[[ $shadow -gt 0 && $conv -gt 0 && $waited -ge 0 ]] ||
    fail "converted: $conv converted and $shadow shadow calls of 24"
if ((waited)); then
    why="why-fp32	measuring $waited"
else
    why="why-fp32	None: every call at the sites ran converted."
fi
{
    common
    cat <<EOF
meta	built-in
summary	24 calls at 1 site, $conv converted (their converted results reached the program), $shadow measured in shadow (the program got FP32's results)
verdict	faster: the intercepted GEMMs and convolutions run ${steady}x as fast as FP32 in steady state (this run:
verdict	$conv of 24 calls converted (their results reached the program), $shadow measured in shadow
time	the intercepted GEMMs and convolutions took
time	ms of device time of the run's
time	(wall clock); the shim saved
chart-speedup	1.0x = FP32 speed
chart-error	tolerance 5.0e-03
shapes	main (report_prog+0x
shapes	1024x1024x1024 NN 24 $conv $waited
shapes	auto: tf32 (fp16
shapes	; tf32 6.42x $tf32_err)
$why
next	Nothing to change: $conv of 24 calls converted, no site over the tolerance, speedup
!sites	DEMOTED
!next	Nothing was converted
coverage	FP32, converted
coverage	FP32 kept: shadow runs
EOF
} >converted.expect
page converted

# ---- A version-1 snapshot written by hand ----------------------------------------
cp "$src/html_v1.json" "$out/v1.json"
{
    common
    cat <<'EOF'
heading	ampshim report: <img src=x onerror=alert(1)>
verdict	faster: the intercepted GEMMs and convolutions run 2.00x as fast as FP32 in this run; 7 of 15 calls converted (their results reached the program), 0 measured in shadow
snapshot	SNAPSHOT: this report was written during the run
meta	/opt/<b>bold</b>/trainer & co
meta	Command line -
meta	Host -
meta	pid 4242, build-id -
meta	user: /home/me/.config/ampshim/"quoted".policy, tolerance 1.0e-03
meta	Device none: no CUDA context was current
meta	Times -
meta	NVIDIA_TF32_OVERRIDE=0
meta	SNAPSHOT: written during the run; the program did not reach exit (schema version 1)
sites	<script>alert('site')</script> (libtrain.so+0x1000)
chart-speedup	loss_step (trainer+0x2000) stayed FP32: policy 5
shapes	1024x1024x1024 NN 10 7 3 (scratch-cap 2, cold-capture 1) 2.00x 2.00x 4.00e-04 / 1.0e-03
why-fp32	This report gives no reasons per call (it predates fp32_reasons)
why-fp32	scratch-cap 2 25.0% 1 fallback: the scratch the call needed is over the cap
why-fp32	cold-capture 1 12.5% 1
why-fp32	policy 5 62.5% 1 kept FP32 by the policy
next	This is a snapshot taken during the run: the program did not reach exit, and the counts stop at 2026-01-02T03:04:05Z.
next	3 calls fell back to FP32 after a failed conversion
coverage	-: the report has no coverage
!next	Nothing to change
EOF
} >v1.expect
# The hostile names are text, not markup.
printf '#img\t0\n#b\t0\n' >>v1.expect
page v1

# ---- A version-2 report written by hand ------------------------------------------
cp "$src/html_v2.json" "$out/v2.json"
{
    common
    cat <<'EOF'
meta	./train --epochs 3 --note 'it'\''s <fast>'
meta	Host node-7
verdict	faster: the intercepted GEMMs and convolutions run 1.63x as fast as FP32 in this run; 98 of 132 calls converted (their results reached the program), 4 measured in shadow
meta	measured on the GPU (events on the caller's stream)
meta	complete: written at exit (schema version 2)
chart-speedup	bias_small (train+0x12c) stayed FP32: min-size 10, no-rule 2 stayed FP32: min-size 10, no-rule 2
chart-speedup	speedup: 0.8 x 0.8 DEMOTED
chart-error	tolerance 1.0e-03
shapes	dense_forward (train+0x64) 4096x4096x4096 NN 92 92 0 1.82x 2.05x 2.00e-04 / 1.0e-03
shapes	dense_forward (train+0x64) 4096x4096x2048 NN 8 8 0 - (no FP32 baseline measured for this shape) - (no FP32 baseline measured for this shape)
shapes	bias_small (train+0x12c) 64x64x64 NN 10 0 10 (min-size) - - exactly FP32 / 1.0e-03
why-fp32	demoted 18 60.0% 1
why-fp32	min-size 10 33.3% 1 smaller than the policy's min-size
why-fp32	no-rule 2 6.7% 1
!why-fp32	This report gives no reasons per call
next	conv_block (train+0xc8) was demoted to FP32: shadow max_rel_err=0.02 exceeds the policy's tolerance 0.001. Keep it FP32 with rule fp32 when caller "conv_block", or try the FP32-accurate split with rule tf32x3 verify 2 when caller "conv_block" (convolutions of one group)
next	10 calls stayed FP32 under the policy's min-size: run ampshim calibrate -- PROGRAM
next	Converted calls without an FP32 time: 8 (no FP32 baseline measured for this shape)
coverage	100.0% FP32 within the shim's reach (converted 90.0%, kept FP32 10.0%)
EOF
} >v2.expect
page v2

# ---- A job of two ranks: the summary's page --------------------------------------
mkdir -p "$out/job"
for rank in 0 1; do
    mode=tf32
    [[ $rank == 1 ]] && mode=fp32
    OMPI_COMM_WORLD_RANK=$rank OMPI_COMM_WORLD_LOCAL_RANK=$rank \
        OMPI_COMM_WORLD_SIZE=2 run --mode $mode --report \
        "$out/job/rank-%r.json" -- "$prog" --calls 4 --m 128 --n 128 --k 128
done
cat >job.expect <<'EOF'
heading	ampshim job: report_prog
job	2 processes (openmpi, job -, size 2).
ranks	rank host device calls converted FP32 ms actual ms speedup report
ranks	1
ranks	NVIDIA H100 SXM (emulated) 4 0 - - -
slowest	Slowest: rank 0
sites	main (report_prog+0x
sites	cublasSgemm_v2 2 4/4/4
differ	cublasSgemm_v2: modes: 0=tf32 1=fp32
#script	0
EOF
page job "$out/job"
echo "report --html: pages of demoted, FP32-only, broken-policy, converted," \
     "version-1 and version-2 reports and of a job render as expected;" \
     "screenshots in $out"
