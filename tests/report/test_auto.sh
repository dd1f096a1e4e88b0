#!/usr/bin/env bash
# The policy action auto against `ampshim calibrate`, on layer_mix's five
# shapes that favour different modes (skinny, square, long-k, tiny,
# cancelling):
# - calibrate measures every candidate in its own run and writes a policy
#   (any gain over FP32 converting, as under auto);
# - the program runs once with that policy and once with `rule auto`;
# - every site's online choice is calibrate's, the chosen candidate is
#   the fastest eligible one of the report, the program's output is the
#   same under both, and the auto run's modelled speedup over all its
#   calls (its shadow calls included) is at least 95 % of the run with
#   calibrate's per-site best modes.
# usage: test_auto.sh LAYER_MIX LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
#                     CHECK_SCHEMA
set -euo pipefail

prog=$(realpath "$1") shim=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5 schema=$(realpath "$6")
tmp=$(mktemp -d /tmp/ampshim-auto-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "auto test: $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -40 "$f" >&2; }
    done
    exit 1
}
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu AMPSHIM_LIBRARY=$shim
cd "$tmp"

# Long enough that measuring up to five candidates (three timed calls
# each: the cancelling layer's fp16, bf16 and tf32 over the tolerance,
# then fp16x3 and tf32x3) is a small part of a run.
calls=800

# --min-speedup 1: auto takes a candidate that is faster than FP32 at
# all; calibrate, by default, one at least 5 % faster. Compared by auto's
# criterion. The FP32-accurate splits are auto's candidates where none of
# fp16, bf16 and tf32 is within the tolerance (cancelling_layer): both
# are calibrate's too.
"$tool" calibrate -o cal.policy --modes fp16,bf16,tf32,fp16x3,tf32x3 \
    --min-speedup 1 -- "$prog" shapes 3 >calibrate.out 2>calibrate.err ||
    fail "calibrate failed"
cat >auto.policy <<'EOF'
set tolerance 5e-3
set shadow-rate 0.001
rule auto when gemm
default fp32
EOF
"$tool" run --policy cal.policy --report cal.json -- "$prog" shapes $calls \
    >cal.out 2>cal.err || fail "the run with calibrate's policy failed"
"$tool" run --policy auto.policy --report auto.json -- "$prog" shapes $calls \
    >auto.out 2>auto.err || fail "the run with auto failed"
for r in cal auto; do
    "$python" "$schema" $r.json >$r-schema.out || fail "$r.json: schema"
done
cmp -s cal.out auto.out || fail "the output differs between the runs"
"$tool" report auto.json >report.out || fail "ampshim report auto.json"

"$python" - cal.policy cal.json auto.json report.out <<'PY' || fail "choices"
import json, re, sys

policy, cal, auto = open(sys.argv[1]).read(), *map(
    lambda p: json.load(open(p)), sys.argv[2:4])
table = open(sys.argv[4]).read()

# calibrate's choice per caller, from its rules.
chosen = {m[1]: m[0] for m in re.findall(
    r'^rule (\S+)(?: verify \d+)? when .* caller "([^"]+)"', policy, re.M)}
if len(chosen) != 5:
    sys.exit(f"calibrate chose for {len(chosen)} sites, not 5: {chosen}")
problems = []
for site in auto["sites"]:
    name = site["function"]
    (shape,) = site["shapes"]
    a = shape["auto"]
    if a["state"] not in ("chosen", "fp32"):
        problems.append(f"{name}: still {a['state']}")
        continue
    if a["choice"] != chosen.get(name):
        problems.append(f"{name}: auto chose {a['choice']}, calibrate "
                        f"{chosen.get(name)}")
    eligible = [c for c in a["candidates"] if c["eligible"]]
    best = min(eligible, key=lambda c: c["candidate_ms"], default=None)
    if (best["mode"] if best else "fp32") != a["choice"]:
        problems.append(f"{name}: {a['choice']} is not the fastest "
                        f"eligible candidate")
    if f"auto: {a['choice']} (" not in table:
        problems.append(f"{name}: ampshim report does not name the choice")
    print(f"{name}: {a['choice']}")
# Different shapes favour different modes here.
if len(set(chosen.values())) < 2:
    problems.append(f"every site chose the same: {chosen}")

def speedup(r):
    t = r["totals"]["time"] if "time" in r["totals"] else r["totals"]
    return t["fp32_ms"] / t["actual_ms"]
s_cal, s_auto = speedup(cal), speedup(auto)
print(f"modelled speedup: calibrate's policy {s_cal:.3f}, auto "
      f"{s_auto:.3f} ({100 * s_auto / s_cal:.1f} %)")
if not s_auto >= 0.95 * s_cal:
    problems.append(f"auto's speedup {s_auto:.3f} is under 95 % of "
                    f"calibrate's {s_cal:.3f}")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
PY
