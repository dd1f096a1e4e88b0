#!/usr/bin/env bash
# The Python programs that scripts' GPU checks run (examples/python), on a
# CPU:
# - every one compiles, and --help exits 0;
# - jax_steps.py and cupy_checks.py at tiny size either run (a result line)
#   or skip (status 77 and a 'skip:' line);
# - with a Python that imports torch (Debian's python3-torch is enough):
#   torch_steps.py runs both models in the variants fp32, tf32 and
#   autocast at tiny size on the CPU, each with one result line that names
#   what ran and a finite loss; two fp32 runs of one seed print the same
#   loss and another seed another; --compile runs or skips (torch < 2.0
#   has no torch.compile), and --device cuda skips where CUDA is missing.
# Without such a Python the torch checks are skipped and so is the test
# (status 77).
# usage: test_python_programs.sh EXAMPLES_PYTHON_DIR PYTHON3
set -euo pipefail

dir=$(realpath "$1") python=$2
tmp=$(mktemp -d /tmp/ampshim-python-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "python programs: $*" >&2
    for f in "$tmp"/*.out "$tmp"/*.err; do
        [[ -s $f ]] && { echo "--- $f" >&2; cat "$f" >&2; }
    done
    exit 1
}
unset LD_PRELOAD $(compgen -v AMPSHIM_ || true)
export PYTHONDONTWRITEBYTECODE=1 CUDA_VISIBLE_DEVICES=
cd "$tmp"

programs=("$dir"/*.py)
[[ -e ${programs[0]} ]] || fail "no programs in $dir"
PYTHONPYCACHEPREFIX=$tmp/pycache "$python" -m py_compile "${programs[@]}" \
    >compile.out 2>compile.err || fail "py_compile"

# The Python that runs the programs: the first that imports torch, else
# the build's.
runner=$python
have_torch=0
for candidate in /usr/bin/python3 python3 "$python"; do
    if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import torch' >/dev/null 2>&1; then
        runner=$candidate have_torch=1
        break
    fi
done
echo "python programs: running them with $runner"

for p in "${programs[@]}"; do
    name=$(basename "$p" .py)
    "$runner" "$p" --help >"$name-help.out" 2>"$name-help.err" ||
        fail "$name --help: status"
    grep -q '^exit status:' "$name-help.out" ||
        fail "$name --help: no exit statuses"
done

# run NAME PROGRAM ARGS...: the status in $status, stdout in NAME.out.
run() {
    local name=$1
    shift
    status=0
    "$runner" "$@" >"$name.out" 2>"$name.err" || status=$?
}

# ran_or_skipped NAME LINES: status 0 with LINES result lines, or 77 with
# one skip line.
ran_or_skipped() {
    local name=$1 lines=$2 results
    case $status in
    0)
        results=$(grep -c '^result: ' "$name.out" || true)
        [[ $results == "$lines" ]] ||
            fail "$name: $results result lines, $lines expected"
        echo "python programs: $name ran"
        ;;
    77)
        grep -q '^skip: .' "$name.out" || fail "$name: 77 without a skip line"
        echo "python programs: $name skipped: $(grep '^skip: ' "$name.out")"
        ;;
    *)
        fail "$name: status $status"
        ;;
    esac
}

run jax_mlp "$dir/jax_steps.py" --model mlp --size tiny
ran_or_skipped jax_mlp 1
run jax_cnn "$dir/jax_steps.py" --model cnn --size tiny
ran_or_skipped jax_cnn 1
run cupy "$dir/cupy_checks.py" --size tiny
ran_or_skipped cupy 2

if ((!have_torch)); then
    echo "python programs: no python3 here imports torch; the checks of" \
         "torch_steps.py are skipped (install python3-torch)"
    exit 77
fi

# torch_run NAME MODEL VARIANT ARGS...: a tiny run on the CPU that must
# succeed; its loss in $loss.
torch_run() {
    local name=$1 model=$2 variant=$3 line
    shift 3
    run "$name" "$dir/torch_steps.py" --model "$model" --variant "$variant" \
        --size tiny --device cpu --steps 2 --warmup 1 "$@"
    ((status == 0)) || fail "$name: status $status"
    [[ $(grep -c '^result: ' "$name.out") == 1 ]] ||
        fail "$name: not one result line"
    line=$(grep '^result: ' "$name.out")
    [[ $(tail -n 1 "$name.out") == "$line" ]] ||
        fail "$name: the result line is not the last"
    [[ $line =~ ^result:\ framework=torch\ model=$model\ variant=$variant\ compile=0\ device=cpu\ size=tiny\ steps=2\ ms_per_step=[0-9]+\.[0-9]+\ loss=([^ ]+)$ ]] ||
        fail "$name: result line: $line"
    loss=${BASH_REMATCH[1]}
    [[ $loss =~ ^-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?$ ]] ||
        fail "$name: loss $loss is not a finite number"
    echo "python programs: $name: loss $loss"
}

for model in resnet50 gpt2; do
    for variant in fp32 tf32 autocast; do
        torch_run "${model}_$variant" "$model" "$variant"
    done
    first=$(grep -o 'loss=.*' "${model}_fp32.out")
    torch_run "${model}_again" "$model" fp32
    [[ loss=$loss == "$first" ]] ||
        fail "$model: the same seed gave $first, then loss=$loss"
    torch_run "${model}_seed" "$model" fp32 --seed 1
    [[ loss=$loss != "$first" ]] ||
        fail "$model: seeds 0 and 1 gave the same $first"

    run "${model}_compile" "$dir/torch_steps.py" --model "$model" \
        --size tiny --device cpu --steps 2 --compile
    ran_or_skipped "${model}_compile" 1
done

run cuda "$dir/torch_steps.py" --size tiny --device cuda --steps 1
((status == 77)) || fail "cuda: status $status where CUDA is hidden"
ran_or_skipped cuda 0
echo "python programs: passed"
