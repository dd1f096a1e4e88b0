#!/usr/bin/env bash
# `ampshim policy which` and `ampshim policy check DIR`, as a user meets
# them, over temporary user and system policy directories:
# - which: the exact lines for a program a broken file is not for (it is
#   skipped, with its error), one it is for (status 1), a broken file whose
#   match lines cannot be read (every program), a user file chosen by
#   build-id, AMPSHIM_POLICY (valid and broken), the built-in default, a
#   program found in PATH, and the usage errors;
# - check: a directory's files in name order, each error as
#   FILE:LINE:COL: message with the nearest known word, the closing
#   "N files, M with errors" line, the status; a directory and a file
#   together; a directory that cannot be read.
# usage: test_policy_cli.sh AMPSHIM PROGRAM_A PROGRAM_B
set -euo pipefail

tool=$(realpath "$1") prog_a=$(realpath "$2") prog_b=$(realpath "$3")
tmp=$(mktemp -d /tmp/ampshim-policy-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset $(compgen -v AMPSHIM_ || true)
export XDG_CONFIG_HOME=$tmp/user XDG_CONFIG_DIRS=$tmp/sys
user=$tmp/user/ampshim/policies sys=$tmp/sys/ampshim/policies
mkdir -p "$user" "$sys"
a=${prog_a##*/} b=${prog_b##*/}
cd "$tmp"

fail() {
    echo "policy cli test: $*" >&2
    exit 1
}

# t NAME [VAR=value...] -- ARGS...: the tool's stdout, stderr and status in
# NAME.out, NAME.err, NAME.rc.
t() {
    local name=$1
    shift
    local -a vars=()
    while [[ $1 != -- ]]; do vars+=("$1"); shift; done
    shift
    set +e
    env "${vars[@]}" "$tool" "$@" </dev/null >"$tmp/$name.out" \
        2>"$tmp/$name.err"
    echo $? >"$tmp/$name.rc"
    set -e
}
status() {
    [[ $(cat "$tmp/$1.rc") == "$2" ]] ||
        fail "$1: status $(cat "$tmp/$1.rc"), not $2; stderr: $(cat "$tmp/$1.err")"
}
# same NAME STREAM: NAME.STREAM is exactly the text on standard input.
same() {
    local want
    want=$(cat)
    [[ $(cat "$tmp/$1.$2") == "$want" ]] ||
        fail "$1: $2 differs:$(diff <(echo "$want") "$tmp/$1.$2")"
}
empty() { [[ ! -s $tmp/$1.$2 ]] || fail "$1: $2 is not empty"; }

# The build-ids, as the ELF notes hold them (not as the tool reads them).
build_id() {
    readelf -n "$1" | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p'
}
id_a=$(build_id "$prog_a") id_b=$(build_id "$prog_b")
[[ -n $id_a && -n $id_b ]] || fail "readelf found no build-id"

# ---- which: a shared directory with a broken file for program A ----------------
printf 'match exe nothing\ndefault tf32\n' >"$sys/05-other.policy"
printf 'match exe %s\nset tolerance 1e-2\nrule fp61 when gemm\ndefault fp16\n' \
    "$a" >"$sys/10-a.policy"
printf 'match exe *\ndefault fp16\n' >"$sys/20-all.policy"

t which_b -- policy which "$prog_b"
status which_b 0
empty which_b err
same which_b out <<EOF
program: $prog_b (build-id $id_b)
skipped: $sys/05-other.policy (system): its match lines do not accept $b
skipped: $sys/10-a.policy (system): it has an error, but its match lines do not accept $b: $sys/10-a.policy:3:6: unknown action 'fp61'; did you mean 'fp16'?
policy:  $sys/20-all.policy
source:  system
match:   $sys/20-all.policy:1 (match exe *) accepts $b
EOF

t which_a -- policy which "$prog_a"
status which_a 1
empty which_a err
same which_a out <<EOF
program: $prog_a (build-id $id_a)
skipped: $sys/05-other.policy (system): its match lines do not accept $a
policy:  $sys/10-a.policy
source:  system
match:   $sys/10-a.policy:1 (match exe $a) accepts $a
error:   $sys/10-a.policy:3:6: unknown action 'fp61'; did you mean 'fp16'?
result:  the policy has an error: nothing is converted, every call of $a runs FP32
EOF

# A name, looked up in PATH, is the same program.
t which_path PATH="${prog_a%/*}:$PATH" -- policy which "$a"
status which_path 1
diff "$tmp/which_a.out" "$tmp/which_path.out" >/dev/null ||
    fail "which_path: not the output for $prog_a"
echo "which: a broken file for $a only: $b skips it (0), $a gets it (1)"

# ---- which: match lines that cannot be read: every program ---------------------
printf 'match exe %s\nmatch build-id 12x4\ndefault fp16\n' "$a" \
    >"$sys/10-a.policy"
t which_all -- policy which "$prog_b"
status which_all 1
same which_all out <<EOF
program: $prog_b (build-id $id_b)
skipped: $sys/05-other.policy (system): its match lines do not accept $b
policy:  $sys/10-a.policy
source:  system
match:   $sys/10-a.policy: its match lines cannot be read ($sys/10-a.policy:2:18: expected a hex digit in the build-id, found 'x'), so it applies to every program
error:   $sys/10-a.policy:2:18: expected a hex digit in the build-id, found 'x'
result:  the policy has an error: nothing is converted, every call of $b runs FP32
EOF
# No match line at all: every program, too.
printf 'rule fp16 whn gemm\ndefault fp16\n' >"$sys/10-a.policy"
t which_nomatch -- policy which "$prog_b"
status which_nomatch 1
same which_nomatch out <<EOF
program: $prog_b (build-id $id_b)
skipped: $sys/05-other.policy (system): its match lines do not accept $b
policy:  $sys/10-a.policy
source:  system
match:   $sys/10-a.policy: no match line, so it applies to every program
error:   $sys/10-a.policy:1:11: unknown keyword 'whn'; did you mean 'when'?
result:  the policy has an error: nothing is converted, every call of $b runs FP32
EOF
rm "$sys/10-a.policy"
echo "which: unreadable match lines or none: the broken file is for every program (1)"

# ---- which: the user directory, by build-id; AMPSHIM_POLICY; built-in ---------
printf 'match build-id %s\ndefault bf16\n' "$id_b" >"$user/b.policy"
t which_user -- policy which "$prog_b"
status which_user 0
same which_user out <<EOF
program: $prog_b (build-id $id_b)
policy:  $user/b.policy
source:  user
match:   $user/b.policy:1 (match build-id $id_b) accepts $b
EOF
printf 'match exe nothing\ndefault fp16\n' >"$tmp/env.policy"
t which_env AMPSHIM_POLICY="$tmp/env.policy" AMPSHIM_MODE=fp16 -- \
    policy which "$prog_b"
status which_env 0
same which_env out <<EOF
program: $prog_b (build-id $id_b)
policy:  $tmp/env.policy
source:  AMPSHIM_POLICY
match:   not consulted: AMPSHIM_POLICY names the file
note:    AMPSHIM_MODE=fp16 is set: the shim reads no policy and runs every call in that mode
EOF
printf 'default fp16 verify 2\n' >"$tmp/env.policy"
t which_env_bad AMPSHIM_POLICY="$tmp/env.policy" -- policy which "$prog_b"
status which_env_bad 1
same which_env_bad out <<EOF
program: $prog_b (build-id $id_b)
policy:  $tmp/env.policy
source:  AMPSHIM_POLICY
match:   not consulted: AMPSHIM_POLICY names the file
error:   $tmp/env.policy:1:9: expected end of line: the default takes no 'verify'
result:  the policy has an error: nothing is converted, every call of $b runs FP32
EOF
rm "$user/b.policy" "$sys/20-all.policy"
t which_builtin -- policy which "$prog_b"
status which_builtin 0
same which_builtin out <<EOF
program: $prog_b (build-id $id_b)
skipped: $sys/05-other.policy (system): its match lines do not accept $b
policy:  built-in default
source:  built-in
match:   none: no AMPSHIM_POLICY, and no file in the policy directories applies to $b
EOF
echo "which: user by build-id, AMPSHIM_POLICY (and AMPSHIM_MODE's note), built-in"

# ---- which: usage ----------------------------------------------------------------
t which_two -- policy which "$prog_a" "$prog_b"
status which_two 2
empty which_two out
same which_two err <<EOF
ampshim policy which: one PROGRAM at most
Try 'ampshim policy which --help' for more information.
EOF
t which_missing -- policy which "$tmp/no-such-program"
status which_missing 2
same which_missing err <<EOF
ampshim policy which: cannot find $tmp/no-such-program: No such file or directory
EOF
t which_help -- policy which --help
status which_help 0
grep -qF "usage: ampshim policy which [--] [PROGRAM]" "$tmp/which_help.out" ||
    fail "which_help: no usage line"
grep -qF "exit status:" "$tmp/which_help.out" || fail "which_help: no exit status"
t policy_help -- policy --help
grep -qF "  which [PROGRAM]" "$tmp/policy_help.out" ||
    fail "policy --help does not list which"
echo "which: usage errors 2, --help 0"

# ---- check DIR -------------------------------------------------------------------
mkdir -p "$tmp/d"
printf 'match exe a\ndefault fp16\n' >"$tmp/d/a.policy"
printf 'set tolerence 1e-3\ndefault fp16\n' >"$tmp/d/b.policy"
printf 'rule fp16 when gemm and k >= 64\ndefault fp32\n' >"$tmp/d/c.policy"
printf 'rule convrt\ndefault fp32\n' >"$tmp/d/d.policy"
printf 'not a policy\n' >"$tmp/d/notes.txt"
printf 'not a policy\n' >"$tmp/d/.hidden.policy"
t check_dir -- policy check "$tmp/d"
status check_dir 1
same check_dir err <<EOF
$tmp/d/b.policy:1:5: unknown setting 'tolerence'; did you mean 'tolerance'?
$tmp/d/d.policy:1:6: expected an action (fp32, fp16, bf16, tf32, fp16x3, tf32x3, bf16x9, allow-conversion, auto, shadow or shadow:MODE), found 'convrt'
EOF
same check_dir out <<EOF
$tmp/d/a.policy: valid, 0 rules
  applies to (line 1): executable a
  no tolerance: shadow errors are measured, never acted on
  default (line 2): fp16
$tmp/d/c.policy: valid, 1 rule
  applies to: every program (no match line)
  no tolerance: shadow errors are measured, never acted on
  rule 1 (line 1): fp16
  default (line 2): fp32
4 files, 2 with errors
EOF
# A directory and a file together; the valid ones alone: status 0.
rm "$tmp/d/b.policy" "$tmp/d/d.policy"
printf 'default bf16\n' >"$tmp/one.policy"
t check_mixed -- policy check "$tmp/d/" "$tmp/one.policy"
status check_mixed 0
empty check_mixed err
[[ $(tail -n 1 "$tmp/check_mixed.out") == "3 files, 0 with errors" ]] ||
    fail "check_mixed: last line '$(tail -n 1 "$tmp/check_mixed.out")'"
grep -qxF "$tmp/d/a.policy: valid, 0 rules" "$tmp/check_mixed.out" ||
    fail "check_mixed: the directory's file is not named as DIR/FILE"
# One file: no count line, as before.
t check_one -- policy check "$tmp/one.policy"
status check_one 0
[[ $(grep -c "files, " "$tmp/check_one.out" || true) == 0 ]] ||
    fail "check_one: a count line for one file"
t check_empty -- policy check "$user"
status check_empty 0
same check_empty out <<EOF
$user: no *.policy file
0 files, 0 with errors
EOF
mkdir "$tmp/locked"
chmod 0 "$tmp/locked"
if ! ls "$tmp/locked" >/dev/null 2>&1; then # not when run as root
    t check_locked -- policy check "$tmp/locked"
    status check_locked 1
    same check_locked err <<EOF
$tmp/locked: cannot read the directory: Permission denied
EOF
fi
chmod 0700 "$tmp/locked"
echo "check DIR: each file's error with the nearest word, N files, M with errors, status"
