#!/usr/bin/env bash
# The coverage meter on the emulator, with coverage_mix (an FP32 SGEMM, an
# FP32 SGEMM with alpha 0, a DGEMM, an HGEMM, a GemmEx on half operands
# and an FP32 and a half convolution, of known shapes) in AMPSHIM_MODE=fp16
# (without the baseline; with it, the same, each FP32 call measured beside
# its FP32 original):
# - every call's status and output bytes as without the shim (the
#   passthrough calls' and the kept one's bit for bit; the converted ones
#   too, their data being exact in FP16);
# - the report's coverage: each kind's calls and FLOPs exactly, the shares;
# - the exit line; `ampshim report` shows the coverage section;
# - coverage_mix --more: a complex GEMM counts 8 m n k FLOPs; an SGEMM, a
#   DGEMM and a CGEMM that cuBLAS refuses count as calls of their kind and
#   did no work (0 FLOPs); their statuses and bytes as without the shim;
# - dlsym on cuBLAS's handle answers the counting hook of cublasDgemm_v2;
# - AMPSHIM_DISABLE=1: no line, no report.
# usage: test_coverage.sh COVERAGE_MIX LIBAMPSHIM EMU_DIR AMPSHIM PYTHON3
set -euo pipefail

prog=$(realpath "$1") lib=$(realpath "$2") emu=$(realpath "$3")
tool=$(realpath "$4") python=$5
tmp=$(mktemp -d /tmp/ampshim-coverage-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
# A sanitized build's runtime must come first in a preloaded child.
preload="${AMP_TEST_PRELOAD_FIRST:+$AMP_TEST_PRELOAD_FIRST }"
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

fail() {
    echo "coverage test: $*" >&2
    for f in "$tmp"/*.err "$tmp"/*.out; do
        [[ -s $f ]] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
    done
    exit 1
}

"$prog" >plain.out 2>plain.err || fail "the plain run failed"
# No baseline shadow call: each FP32 call of coverage_mix converts.
LD_PRELOAD="$preload$lib" AMPSHIM_MODE=fp16 AMPSHIM_BASELINE=off \
    AMPSHIM_REPORT=$tmp/r.json "$prog" >shim.out 2>shim.err ||
    fail "the run under the shim failed"
[[ $(grep -c 'status=0 hash=' plain.out) == 7 ]] || fail "plain statuses"
cmp -s plain.out shim.out || { diff plain.out shim.out >&2;
                               fail "outputs differ"; }

# Each kind: calls and FLOPs. Converted: the SGEMM (65536) and the FP32
# convolution (36864); kept FP32, empty: the SGEMM with alpha 0 (65536);
# FP64: the DGEMM (92160); FP16/BF16: the HGEMM (65536), the GemmEx
# (16384) and the half convolution (36864).
"$python" - "$tmp/r.json" <<'PY' || fail "coverage figures"
import json, sys
cov = json.load(open(sys.argv[1]))["coverage"]
def kind(section, key):
    k = cov[section][key] if section else cov[key]
    return (k["calls"], k["flops"])
want = {
    ("", "converted"): (2, 102400),
    ("fp32_kept", "policy"): (0, 0), ("fp32_kept", "invalid"): (0, 0),
    ("fp32_kept", "empty"): (1, 65536), ("fp32_kept", "pedantic"): (0, 0),
    ("fp32_kept", "fallback"): (0, 0), ("fp32_kept", "unconverted"): (0, 0),
    ("fp32_kept", "library"): (0, 0),
    ("other", "fp64"): (1, 92160), ("other", "complex"): (0, 0),
    ("other", "fp16_bf16"): (3, 118784), ("other", "int8"): (0, 0),
    ("other", "other"): (0, 0),
}
bad = 0
for (section, key), v in want.items():
    if kind(section, key) != v:
        print(f"{section}/{key}: {kind(section, key)}, want {v}")
        bad += 1
total = 378880
checks = [("calls", 7), ("flops", total),
          ("fp32_share", 167936 / total), ("converted_share", 102400 / total),
          ("fp32_kept_share", 65536 / total),
          ("other_share", 210944 / total)]
for key, v in checks:
    if abs(cov[key] - v) > 1e-12:
        print(f"{key}: {cov[key]}, want {v}")
        bad += 1
if abs(cov["other"]["fp64"]["share"] - 92160 / total) > 1e-12:
    print("fp64 share", cov["other"]["fp64"]["share"])
    bad += 1
sys.exit(1 if bad else 0)
PY

# With the baseline (the default) each of those calls is the first of its
# shape at its site: its FP32 original runs beside it, but a forced mode
# gives the program its own result, so it counts as converted work.
LD_PRELOAD="$preload$lib" AMPSHIM_MODE=fp16 \
    AMPSHIM_REPORT=$tmp/baseline.json "$prog" >baseline.out 2>baseline.err ||
    fail "the run with the baseline failed"
cmp -s plain.out baseline.out || fail "baseline: outputs differ"
"$python" - "$tmp/baseline.json" <<'PY' || fail "baseline: coverage figures"
import json, sys
report = json.load(open(sys.argv[1]))
cov = report["coverage"]
assert (cov["converted"]["calls"], cov["converted"]["flops"]) == (2, 102400), cov
shadow = cov["fp32_kept"]["shadow"]
assert (shadow["calls"], shadow["flops"]) == (0, 0), shadow
assert abs(cov["converted_share"] - 102400 / 378880) < 1e-12, cov
assert abs(cov["fp32_kept_share"] - 65536 / 378880) < 1e-12, cov
assert report["totals"]["calls_fp32_measured"] == 2, report["totals"]
PY

line="coverage: 0.000379 GFLOP of GEMM and convolution work in 7 calls, "
line+="44.3 % FP32 within the shim's reach (converted 27.0 %, kept FP32 "
line+="17.3 %), 55.7 % in other precisions"
[[ $(grep -c "^ampshim\[[0-9]*\]: $line\$" shim.err) == 1 ]] ||
    fail "no exit line: $line"
grep -q "^ampshim\[[0-9]*\]: summary cublasDgemm_v2 calls=1 converted=0 fp32=0 fallback=0 passthrough=1$" \
    shim.err || fail "no summary line of cublasDgemm_v2"

"$tool" report r.json >table.out 2>table.err || fail "ampshim report"
grep -q "^coverage: 0.000379 GFLOP" table.out || fail "table: no coverage"
grep -Eq "^FP64 +1 +9\.216e-05 +24\.3%$" table.out ||
    fail "table: no FP64 row"
"$tool" report r.json --html page.html >/dev/null 2>&1 || fail "--html"
grep -q "<h2>Coverage</h2>" page.html || fail "html: no coverage"

# Complex work and refused calls. The CGEMM 16x8x4: 8 m n k = 4096 FLOPs;
# the refused SGEMM (kept FP32 as invalid), DGEMM and CGEMM: 0.
"$prog" --more >more-plain.out 2>more-plain.err ||
    fail "the plain run of --more failed"
LD_PRELOAD="$preload$lib" AMPSHIM_MODE=fp16 AMPSHIM_BASELINE=off \
    AMPSHIM_REPORT=$tmp/more.json "$prog" --more >more.out 2>more.err ||
    fail "the run of --more under the shim failed"
[[ $(grep -c ' status=7 hash=' more-plain.out) == 3 ]] ||
    fail "--more: the refused calls' statuses"
cmp -s more-plain.out more.out || { diff more-plain.out more.out >&2;
                                    fail "--more: outputs differ"; }
"$python" - "$tmp/more.json" <<'PY' || fail "--more: coverage figures"
import json, sys
cov = json.load(open(sys.argv[1]))["coverage"]
got = {
    "complex": (cov["other"]["complex"]["calls"],
                cov["other"]["complex"]["flops"]),
    "fp64": (cov["other"]["fp64"]["calls"], cov["other"]["fp64"]["flops"]),
    "invalid": (cov["fp32_kept"]["invalid"]["calls"],
                cov["fp32_kept"]["invalid"]["flops"]),
    "converted": (cov["converted"]["calls"], cov["converted"]["flops"]),
    "total": (cov["calls"], cov["flops"]),
}
want = {"complex": (2, 4096), "fp64": (1, 0), "invalid": (1, 0),
        "converted": (0, 0), "total": (4, 4096)}
bad = [f"{k}: calls and FLOPs {got[k]}, want {want[k]}"
       for k in want if got[k] != want[k]]
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY

# dlsym on the library's handle (ctypes) gives the shim's hook. Under
# AddressSanitizer, the interpreter's own allocations at exit are not
# leaks of the shim's.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
LD_PRELOAD="$preload$lib" "$python" - "$lib" <<'PY' >dlsym.out 2>dlsym.err ||
import ctypes, sys
shim = ctypes.CDLL(sys.argv[1])
blas = ctypes.CDLL("libcublas.so.13")
for name in ("cublasDgemm_v2", "cublasHgemm", "cublasZgemmStridedBatched"):
    a = ctypes.cast(getattr(blas, name), ctypes.c_void_p).value
    b = ctypes.cast(getattr(shim, name), ctypes.c_void_p).value
    print(name, "hook" if a == b else "vendor")
PY
    fail "dlsym check"
[[ $(grep -c " hook$" dlsym.out) == 3 ]] || fail "dlsym: $(cat dlsym.out)"

LD_PRELOAD="$preload$lib" AMPSHIM_DISABLE=1 AMPSHIM_REPORT=$tmp/off.json \
    "$prog" >off.out 2>off.err || fail "the disabled run failed"
cmp -s plain.out off.out || fail "disabled: outputs differ"
[[ ! -e off.json ]] || fail "disabled: a report"
! grep -q coverage off.err || fail "disabled: a coverage line"
echo "coverage test: all checks passed"
