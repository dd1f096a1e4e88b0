#!/usr/bin/env bash
# `meson install` into a temporary DESTDIR, then the installed files:
# - exactly these: libampshim.so in PREFIX/LIBDIR, the ampshim tool in
#   PREFIX/BINDIR, ampshim.1 and ampshim-policy.5 in PREFIX/MANDIR/man1
#   and man5, the built-in default policy and the examples in
#   PREFIX/DATADIR/ampshim/policies, and the documents (README.md,
#   docs/*.md: the user's guide, the reference, the contributors' guide,
#   the design, the emulator, the benchmarks, the report schema;
#   policy/README.md; where they are in the tree) in
#   PREFIX/DATADIR/doc/ampshim; the data and pages as in the tree;
# - man finds and renders both pages there without a warning;
# - the installed tool's --help names the installed policies, and its
#   `policy check` passes each of them;
# - where `ampshim run` finds the library: AMPSHIM_LIBRARY, next to the
#   tool, ../hooks from a build tree's tool, PREFIX/LIBDIR (the message
#   naming it when it is not there);
# - the installed tool running cxx_site on the emulator: the summary, the
#   exit table (the C++ caller demangled, its label on a line of its own;
#   no FP32 time, so no speedup, under a plain --mode; one under shadow),
#   the report it names (function demangled, symbol raw), and `ampshim
#   report` on it (a program linked without the C++ runtime: the shim
#   loads its demangler);
# - the tool's statuses: the program's (its own 127 too), 128 + N for
#   signal N, 125 when the program cannot be started;
# - a program that ends with _exit(): no summary, no report.
# usage: test_install.sh MESON BUILD_ROOT PREFIX BINDIR LIBDIR BUILD_TOOL
#                        EMU_DIR CXX_SITE PYTHON3 SOURCE_ROOT DATADIR MANDIR
set -euo pipefail

meson=$1 build=$(realpath "$2") prefix=$3 bindir=$4 libdir=$5
build_tool=$(realpath "$6") emu=$(realpath "$7")
prog=$(realpath "$8")
python=$9 source=$(realpath "${10}") datadir=${11} mandir=${12}

tmp=$(mktemp -d /tmp/ampshim-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "install test: $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}

# Only this test's settings: none of the caller's AMPSHIM_* variables,
# preloads or policy files.
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/no-config XDG_CONFIG_DIRS=$tmp/no-config
export LD_LIBRARY_PATH=$emu
cd "$tmp"

# ---- The install -----------------------------------------------------------
dest=$tmp/root
"$meson" install -C "$build" --destdir "$dest" --no-rebuild \
    >"$tmp/install.out" 2>"$tmp/install.err" || fail "meson install failed"
at() { [[ $1 == /* ]] && echo "$1" || echo "$prefix/$1"; }
lib_path=$(at "$libdir")/libampshim.so
tool_path=$(at "$bindir")/ampshim
lib=$dest$lib_path
tool=$dest$tool_path
[[ -f $lib ]] || fail "no $lib_path under the DESTDIR"
[[ -x $tool ]] || fail "no $tool_path under the DESTDIR"
man_dir=$(at "$mandir")
policy_dir=$(at "$datadir")/ampshim/policies
doc_dir=$(at "$datadir")/doc/ampshim

# What should be there, from the source tree: "INSTALLED-PATH SOURCE-FILE"
# (SOURCE-FILE "-" for the built files).
{
    echo "$lib_path -"
    echo "$tool_path -"
    echo "$man_dir/man1/ampshim.1 man/ampshim.1"
    echo "$man_dir/man5/ampshim-policy.5 man/ampshim-policy.5"
    echo "$policy_dir/default.policy policy/default.policy"
    for f in "$source"/policy/examples/*.policy; do
        echo "$policy_dir/${f##*/} policy/examples/${f##*/}"
    done
    for f in README.md policy/README.md; do echo "$doc_dir/$f $f"; done
    for f in "$source"/docs/*.md; do
        echo "$doc_dir/docs/${f##*/} docs/${f##*/}"
    done
} | sort >"$tmp/expected.list"
cut -d' ' -f1 "$tmp/expected.list" >"$tmp/expected"
(cd "$dest" && find . ! -type d | sed 's/^\.//' | sort) >"$tmp/installed"
if ! cmp -s "$tmp/expected" "$tmp/installed"; then
    diff "$tmp/expected" "$tmp/installed" >&2 || true
    fail "the installed files differ from the expected (< expected, > installed)"
fi
while read -r path from; do
    [[ $from == - ]] || cmp -s "$source/$from" "$dest$path" ||
        fail "$path is not a copy of $from"
done <"$tmp/expected.list"
echo "installed: $(wc -l <"$tmp/installed") files, exactly these:"
sed 's/^/  /' "$tmp/installed"

# ---- The manual pages: man finds them and renders them without a warning ----
command -v man >/dev/null || fail "man is missing (scripts/setup.sh installs man-db)"
for page in "1 ampshim" "5 ampshim-policy"; do
    read -r section name <<<"$page"
    found=$(man -M "$dest$man_dir" -w "$section" "$name" 2>"$tmp/man.err") ||
        fail "man -M PREFIX/MANDIR -w $section $name: not found"
    [[ $found == "$dest$man_dir/man$section/$name.$section" ]] ||
        fail "man found $name($section) at $found"
    MANWIDTH=80 MANPAGER=cat man --warnings=w -M "$dest$man_dir" \
        "$section" "$name" >"$tmp/man.out" 2>"$tmp/man.err" ||
        fail "man $section $name: status $?"
    [[ ! -s $tmp/man.err ]] || fail "man $section $name: warnings"
    grep -q "^NAME" "$tmp/man.out" || fail "man $section $name: no NAME"
done
echo "man: ampshim(1) and ampshim-policy(5) found in PREFIX/MANDIR, no warning"

# ---- The installed tool: its help names the installed policies ---------------
"$tool" --help >"$tmp/help.out" 2>"$tmp/help.err" || fail "--help: status $?"
[[ $(tail -n 2 "$tmp/help.out") == "See ampshim(1), ampshim-policy(5); example policies in
$policy_dir." ]] || fail "--help does not end by naming $policy_dir"
"$tool" policy check --help >"$tmp/check_help.out" 2>&1 ||
    fail "policy check --help: status $?"
grep -qxF "$policy_dir." "$tmp/check_help.out" ||
    fail "policy check --help does not name $policy_dir"
for f in "$dest$policy_dir"/*.policy; do
    "$tool" policy check "$f" >"$tmp/check.out" 2>"$tmp/check.err" ||
        fail "policy check ${f#"$dest"}: status $?"
    [[ $(head -n 1 "$tmp/check.out") =~ ^"$f: valid, "[0-9]+" rule"s?$ ]] ||
        fail "policy check ${f#"$dest"}: no 'valid' line"
done
echo "help: names $policy_dir; policy check passes its $(ls "$dest$policy_dir" | wc -l) policies"

# run NAME TOOL [ENV...] -- ARGS...: the tool's stdout, stderr and status
# in $tmp/NAME.out, .err, .rc.
run() {
    local name=$1 tool=$2
    shift 2
    local -a vars=()
    while [[ $1 != -- ]]; do vars+=("$1"); shift; done
    shift
    set +e
    env "${vars[@]}" "$tool" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    set -e
}
rc() { cat "$tmp/$1.rc"; }
has() { grep -qF -- "$2" "$tmp/$1.err" || fail "$1: stderr lacks '$2'"; }
# The exit table's row of the site: its columns after "|". The label,
# "app::trainStep() (cxx_site+0xOFFSET)", is wider than the 28 characters
# of the site column: it has a line of its own, and the row follows.
row() {
    grep -A1 -E "]: \| app::trainStep\(\) \(cxx_site\+0x[0-9a-f]+\)$" \
        "$tmp/$1.err" | tail -n +2 | sed 's/.*]: | .\{28\} //' || true
}

# ---- PREFIX/LIBDIR: the last place the tool looks ----------------------------
if [[ -e $lib_path ]]; then
    echo "skipped the PREFIX/LIBDIR lookup: $lib_path exists on this system"
else
    run nolib "$tool" -- run --report off -- "$prog"
    [[ $(rc nolib) == 125 ]] || fail "nolib: status $(rc nolib), not 125"
    has nolib "cannot find libampshim.so ($lib_path); set AMPSHIM_LIBRARY"
    echo "without a library: status 125, looked for $lib_path"
fi

# ---- AMPSHIM_LIBRARY, --mode fp16 without a baseline: no FP32 time ---------
run fp16 "$tool" "AMPSHIM_LIBRARY=$lib" AMPSHIM_BASELINE=off -- \
    run --mode fp16 --report "$tmp/fp16.json" -- "$prog"
[[ $(rc fp16) == 0 ]] || fail "fp16: status $(rc fp16)"
grep -q '^cxx_site c0=' "$tmp/fp16.out" || fail "fp16: no program output"
has fp16 "summary cublasSgemm_v2 calls=1 converted=1 fp32=0 fallback=0"
has fp16 "ampshim: report: $tmp/fp16.json (ampshim report $tmp/fp16.json)"
# api calls conv shadow mode fp32-ms actual-ms speedup steady saved-ms
# max-rel-err
read -r -a cols <<<"$(row fp16)"
[[ ${cols[*]:-} == "cublasSgemm_v2 1 1 0 fp16 - - - - - -" ]] ||
    fail "fp16: table row '${cols[*]:-}'"
offset=$("$python" - "$tmp/fp16.json" <<'PY') || fail "fp16: report"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["sites"][0]
assert s["api"] == "cublasSgemm_v2", s["api"]
assert s["function"] == "app::trainStep()", s["function"]
assert s["symbol"] == "_ZN3app9trainStepEv", s["symbol"]
assert s["module"].endswith("/cxx_site"), s["module"]
print("0x%x" % s["offset"])
assert s["converted"] == 1, s["converted"]
assert r["policy"]["source"] == "AMPSHIM_MODE", r["policy"]
PY
echo "AMPSHIM_LIBRARY: converted; table row: ${cols[*]}"
run report "$tool" -- report "$tmp/fp16.json"
[[ $(rc report) == 0 ]] || fail "report: status $(rc report)"
label="app::trainStep() (cxx_site+$offset)"
grep -qxF "$label" "$tmp/report.out" ||
    fail "report: no line '$label'"
grep -A1 -xF "$label" "$tmp/report.out" | tail -n 1 |
    grep -qE '^ {33}cublasSgemm_v2 +1 +1 +0 fp16 ' ||
    fail "report: no row after '$label'"
echo "ampshim report: the site's label $label, its row below"

# ---- Next to the tool, --mode shadow: FP32 measured, a speedup -------------
cp "$lib" "$(dirname "$tool")/libampshim.so"
run shadow "$tool" -- run --mode shadow -- "$prog"
[[ $(rc shadow) == 0 ]] || fail "shadow: status $(rc shadow)"
has shadow "summary cublasSgemm_v2 calls=1 converted=1"
read -r -a cols <<<"$(row shadow)"
[[ ${cols[3]:-} == 1 && ${cols[4]:-} == shadow:fp16 &&
   ${cols[7]:-} =~ ^[0-9]+\.[0-9]+$ ]] ||
    fail "shadow: table row '${cols[*]:-}'"
report=$(ls "$tmp"/ampshim-cxx_site-*.json 2>/dev/null || true)
[[ -n $report ]] || fail "shadow: no ampshim-cxx_site-PID.json"
has shadow "ampshim: report: ampshim-cxx_site-"
echo "next to the tool: shadow; table row: ${cols[*]}; report ${report##*/}"

# ---- The build tree's tool: ../hooks ---------------------------------------
run tree "$build_tool" -- run --mode fp16 --report off -- "$prog"
[[ $(rc tree) == 0 ]] || fail "tree: status $(rc tree)"
has tree "summary cublasSgemm_v2 calls=1 converted=1"
! grep -qF "ampshim: report:" "$tmp/tree.err" || fail "tree: a report named"
echo "build tree: ../hooks found"

# ---- The tool's exit statuses ------------------------------------------------
run notfound "$tool" -- run -- "$tmp/no-such-program"
[[ $(rc notfound) == 125 ]] || fail "not found: status $(rc notfound)"
has notfound "ampshim: cannot run $tmp/no-such-program: No such file or directory; nothing ran"
touch "$tmp/not-executable"
run noexec "$tool" -- run -- "$tmp/not-executable"
[[ $(rc noexec) == 125 ]] || fail "not executable: status $(rc noexec)"
has noexec "ampshim: cannot run $tmp/not-executable: Permission denied; nothing ran"
# A program's own 127 (the dynamic loader's status for a missing library)
# stays the program's, and the message says that it ran.
run own127 "$tool" -- run -- bash -c 'exit 127'
[[ $(rc own127) == 127 ]] || fail "exit 127: status $(rc own127)"
has own127 "ampshim: bash ran and exited with status 127"
! grep -qF "cannot run" "$tmp/own127.err" || fail "exit 127: 'cannot run'"
run signal "$tool" -- run -- bash -c 'kill -TERM $$'
[[ $(rc signal) == 143 ]] || fail "SIGTERM: status $(rc signal), not 143"
run status "$tool" -- run -- bash -c 'exit 7'
[[ $(rc status) == 7 ]] || fail "exit 7: status $(rc status)"
echo "statuses: not found 125, not executable 125 (each named), the program's 127 is 127, SIGTERM 143, exit 7 is 7"

# ---- _exit(): the exit handler does not run ---------------------------------
rm -f "$tmp"/ampshim-cxx_site-*.json
run quick "$tool" -- run --mode fp16 -- "$prog" --quick-exit
[[ $(rc quick) == 0 ]] || fail "quick: status $(rc quick)"
grep -q '^cxx_site c0=' "$tmp/quick.out" || fail "quick: no program output"
! grep -qF "ampshim[" "$tmp/quick.err" || fail "quick: the shim printed"
! ls "$tmp"/ampshim-cxx_site-*.json >/dev/null 2>&1 ||
    fail "quick: a report was written"
echo "_exit(): no summary, no report"
