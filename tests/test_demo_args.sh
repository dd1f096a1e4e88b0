#!/usr/bin/env bash
# scripts/demo.sh's arguments, checked before it sets up or builds
# anything: --help names every GPU model of the emulator (those of
# tests/emu/model.c); --gpu with an unknown name, or without a name, and
# an unknown argument each get one clear message on stderr, nothing on
# stdout, and status 2.
# usage: test_demo_args.sh DEMO_SH MODEL_C
set -euo pipefail

demo=$1 model=$2
tmp=$(mktemp -d /tmp/ampshim-demo-args-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "demo args: $*" >&2; exit 1; }

# t NAME ARGS...: runs the demo with ARGS; status in $tmp/NAME.rc.
t() {
    local name=$1
    shift
    set +e
    timeout 20 bash "$demo" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    set -e
}

t help --help
[[ $(<"$tmp/help.rc") == 0 ]] || fail "--help: status $(<"$tmp/help.rc")"
[[ ! -s $tmp/help.err ]] || fail "--help wrote on stderr: $(<"$tmp/help.err")"
grep -q '^usage: scripts/demo.sh \[--gpu NAME\]$' "$tmp/help.out" ||
    fail "--help: no usage line"
keys=$(sed -n 's/^ *\.pub = { \.key = "\([a-z0-9]*\)".*/\1/p' "$model")
[[ $(wc -w <<<"$keys") -ge 8 ]] || fail "model.c: keys not found: $keys"
for key in $keys; do
    grep -qE "(^|[ ,])$key(,|$)" "$tmp/help.out" ||
        fail "--help does not name the model $key"
done
for key in h100 v100 t4; do
    grep -qw "$key" <<<"$keys" || fail "no $key model in model.c"
done

t unknown --gpu p100
[[ $(<"$tmp/unknown.rc") == 2 ]] ||
    fail "--gpu p100: status $(<"$tmp/unknown.rc"), want 2"
[[ ! -s $tmp/unknown.out ]] || fail "--gpu p100 wrote on stdout"
want="demo: unknown GPU model 'p100' (known: $(echo $keys | sed 's/ /, /g'))"
[[ $(<"$tmp/unknown.err") == "$want" ]] ||
    fail "--gpu p100: stderr '$(<"$tmp/unknown.err")', want '$want'"

t noname --gpu
[[ $(<"$tmp/noname.rc") == 2 && ! -s $tmp/noname.out ]] ||
    fail "--gpu without a name: status $(<"$tmp/noname.rc")"
[[ $(<"$tmp/noname.err") == "demo: --gpu needs a name" ]] ||
    fail "--gpu without a name: '$(<"$tmp/noname.err")'"

t bogus --bogus
[[ $(<"$tmp/bogus.rc") == 2 && ! -s $tmp/bogus.out ]] ||
    fail "--bogus: status $(<"$tmp/bogus.rc")"
head -1 "$tmp/bogus.err" | grep -qx "demo: unknown argument '--bogus'" ||
    fail "--bogus: '$(head -1 "$tmp/bogus.err")'"
echo "demo.sh: --help names $(wc -w <<<"$keys") models; bad arguments refused"
