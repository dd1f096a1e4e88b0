#!/usr/bin/env bash
# The project's check on a real GPU. The GPU machines this project gets
# are rare, brief and offline, so the check travels as a bundle: a
# self-contained directory (at most 48 MiB) that runs anywhere with no
# source tree, no build and no network.
#
# usage: scripts/gpu-check.sh --bundle DIR [--dry-run] [--build BUILD]
#                             [--models KEY,...]
#          builds (or takes the tree built in BUILD) and writes the
#          bundle: the shim, the tool, the example and check programs,
#          the Python programs, the libraries they need that a bare CUDA
#          machine may lack, the legacy trainer's data, the emulator's
#          modelled times for the GPUs it models (--models: the
#          emulator's keys, default h100,h200,b200; a dry bundle's are
#          h200's), and DIR/run.sh; with
#          --dry-run it also carries the CPU device emulator (at most 56 MiB), so that
#          DIR/run.sh --dry-run OUTDIR runs the same steps without a GPU
#          (DIR/run.sh --help says what they are)
#        scripts/gpu-check.sh [--dry-run] [--out FILE] [--build BUILD]
#          makes the bundle in BUILD/gpu-check/bundle and runs it here:
#          on a GPU, the run's results become a new dated section at the
#          top of docs/gpu-results.md (or FILE); with --dry-run, on the
#          emulator, they go to BUILD/gpu-check/out/gpu-results.md (or
#          FILE); without a GPU and without --dry-run it says so, exit 0
#        scripts/gpu-check.sh --record RESULTS [--out FILE]
#          adds a bundle's gpu-results.md, brought back from a GPU
#          machine, as the newest section of docs/gpu-results.md (or FILE)
#
# BUILD defaults to build/ (scripts/build.sh builds it); JOBS=N limits
# the build's jobs. Exit status: 0; 1 when a check failed or the bundle
# could not be made; 2 on bad arguments.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
max_bytes=$((48 * 1024 * 1024))
# A dry bundle never travels to a GPU machine: it adds the emulator and
# the OpenBLAS it computes on (36 MiB of the host's library).
dry_max_bytes=$((56 * 1024 * 1024))

usage() {
    echo "usage: scripts/gpu-check.sh --bundle DIR [--dry-run] [--build BUILD] [--models KEY,...]" >&2
    echo "       scripts/gpu-check.sh [--dry-run] [--out FILE] [--build BUILD]" >&2
    echo "       scripts/gpu-check.sh --record RESULTS [--out FILE]" >&2
    exit 2
}
die() { echo "gpu-check: $*" >&2; exit 1; }

# The programs the steps run, from the build tree's examples/.
programs=(sgemm_check gemm_suite legacy_sgemm conv_check lt_check conv_graph
          conv_fused
          gemm_bench conv_bench speed_bench gemm_numerics solver_check
          graph_nodes deep_queue event_cost legacy_trainer)
# The emulator's models the bundle carries modelled GEMM times for (about
# a minute each, on two cores), and the shapes (those of run.sh's GEMM
# benchmark the emulator computes in seconds).
model_keys=(h100 h200 b200)
model_shapes=1024x1024x1024,2048x2048x2048
dry_model_shapes=256x256x256,512x512x512

# copy_deps FILE DEST: the shared libraries FILE needs that a bare CUDA
# machine may lack into DEST: not glibc's, the compiler runtime's, zlib
# or NVIDIA's (the machine's own are the ones to test against), and not
# those the bundle holds already. They are looked up as the system finds
# them, whatever LD_LIBRARY_PATH says here (a test's names the emulator).
copy_deps() {
    local file=$1 dest=$2 name path
    while read -r name path; do
        case $name in
        linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|\
        librt.so*|libgcc_s.so*|libstdc++.so*|libz.so*) continue ;;
        libcu*|libnv*) continue ;;
        esac
        [[ -e $dest/$name || -e $bundle/emu/$name ]] && continue
        [[ -f $path ]] || die "$file needs $name, which is not found"
        cp -L "$path" "$dest/$name"
    done < <(env -u LD_LIBRARY_PATH ldd "$file" |
             awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
}

# modelled KEY SHAPES MODE: the emulator's modelled time per shape for
# gemm_bench under MODE on the GPU KEY, as "m n k ms" lines.
modelled() {
    local key=$1 shapes=$2 mode=$3
    local -a shim=()
    [[ $mode == none ]] ||
        shim=(LD_PRELOAD="$build/hooks/libampshim.so" AMPSHIM_MODE=$mode
              AMPSHIM_REPORT=off)
    env LD_LIBRARY_PATH="$build/tests/emu" AMPSHIM_EMU_GPU=$key "${shim[@]}" \
        "$build/examples/gemm_bench" --shapes "$shapes" --warmup 2 --reps 1 \
        2>/dev/null |
        sed -n 's/.* m=\([0-9]*\) n=\([0-9]*\) k=\([0-9]*\) .*ms=\([0-9.e+-]*\).*/\1 \2 \3 \4/p'
}

make_bundle() {
    local dir=$1 dry=$2 prog f key mode
    [[ -e $dir ]] && die "$dir exists: name a new directory"
    for prog in "${programs[@]}"; do
        [[ -x $build/examples/$prog ]] || die "$build/examples/$prog is not built"
    done
    bundle=$dir
    mkdir -p "$dir"/{bin,lib,python,tools,data,model}
    for prog in "${programs[@]}"; do
        cp "$build/examples/$prog" "$dir/bin/"
    done
    cp "$build/src/ampshim" "$dir/bin/"
    cp "$build/hooks/libampshim.so" "$dir/lib/"
    cp "$root"/examples/python/*.py "$dir/python/"
    cp "$root/scripts/report_digest.py" "$dir/tools/"
    cp "$root/scripts/gpu-run.sh" "$dir/run.sh"
    chmod +x "$dir/run.sh"
    if [[ $dry == 1 ]]; then
        mkdir -p "$dir/emu"
        for f in "$build"/tests/emu/lib*.so.[0-9]*; do
            [[ -f $f ]] && cp "$f" "$dir/emu/"
        done
    fi
    # What the project built, without its debug sections (the symbol
    # tables stay: the shim names call sites by them); then what they need.
    for f in "$dir"/bin/* "$dir"/lib/*.so "$dir"/emu/*; do
        [[ -f $f ]] || continue
        strip --strip-debug "$f"
        copy_deps "$f" "$dir/lib"
    done

    # The modelled times run.sh compares the measured ones with.
    local shapes=$model_shapes keys=("${model_keys[@]}")
    [[ -z $models ]] || IFS=, read -r -a keys <<<"$models"
    if [[ $dry == 1 ]]; then
        shapes=$dry_model_shapes
        keys=(h200)
    fi
    for key in "${keys[@]}"; do
        for mode in none fp16 bf16 tf32 fp16x3 tf32x3; do
            modelled "$key" "$shapes" "$mode" >"$dir/model/gemm.$key.$mode"
            [[ -s $dir/model/gemm.$key.$mode ]] ||
                die "the emulator modelled no time for $key under $mode"
        done
    done

    # The trainer's data: the whole set where it fits, else its first
    # images; a dry run trains on 512.
    local data=/usr/share/datasets/fashion-mnist train=60000 test=10000
    [[ $dry == 1 ]] && { train=1024; test=512; }
    if [[ $dry == 0 ]] &&
       (( $(du -sb "$dir" | cut -f1) + $(du -sbL "$data" | cut -f1) < max_bytes - 1048576 )); then
        cp -L "$data"/*-ubyte.gz "$dir/data/"
    else
        [[ $dry == 1 ]] || train=20000
        python3 "$root/scripts/idx_subset.py" "$data" "$dir/data" "$train" "$test" ||
            die "could not write the trainer's data"
    fi
    echo "$train training and $test test images of Fashion-MNIST" >"$dir/data/SIZE"

    echo "ampshim $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')," \
         "bundle made $(date -u +%Y-%m-%dT%H:%MZ)$( [[ $dry == 1 ]] && echo ', with the emulator')" \
         >"$dir/MANIFEST"
    local size cap=$max_bytes
    [[ $dry == 1 ]] && cap=$dry_max_bytes
    size=$(du -sb "$dir" | cut -f1)
    ((size <= cap)) ||
        die "the bundle is $size bytes, over the $cap ($((cap / 1048576)) MiB) it may take"
    echo "gpu-check: bundle $dir: $(awk -v s="$size" 'BEGIN { printf "%.1f MiB", s / 1048576 }')"
}

# record RESULTS FILE: RESULTS (a run's gpu-results.md) as the newest
# section of FILE, its headings one level down.
record() {
    local results=$1 file=$2
    [[ -s $results ]] || die "$results: no results"
    {
        echo "# Results on real GPUs"
        echo
        echo "Written by \`scripts/gpu-check.sh\` (a bundle's \`run.sh\`); the newest run first."
        echo
        sed 's/^#/##/' "$results"
        if [[ -f $file ]]; then
            # The earlier runs, below this one.
            sed '1,/^Written by/d' "$file" | sed '1{/^$/d}'
        fi
    } >"$file.new"
    mv "$file.new" "$file"
    echo "gpu-check: recorded $results in $file"
}

main() {
    local dir= dry=0 out= built= results=
    models=
    while [[ $# -gt 0 ]]; do
        case $1 in
        --bundle) dir=${2:-}; [[ -n $dir ]] || usage; shift 2 ;;
        --dry-run) dry=1; shift ;;
        --out) out=${2:-}; [[ -n $out ]] || usage; shift 2 ;;
        --build) built=${2:-}; [[ -n $built ]] || usage; shift 2 ;;
        --models) models=${2:-}; [[ $models =~ ^[a-z0-9]+(,[a-z0-9]+)*$ ]] || usage
                  shift 2 ;;
        --record) results=${2:-}; [[ -n $results ]] || usage; shift 2 ;;
        -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu-check: unknown argument $1" >&2; usage ;;
        esac
    done
    if [[ -n $results ]]; then
        [[ -z $dir && $dry == 0 && -z $built ]] || usage
        record "$results" "${out:-$root/docs/gpu-results.md}"
        return
    fi
    if [[ -z $dir && $dry == 0 ]] && ! nvidia-smi -L >/dev/null 2>&1; then
        echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L lists none):" \
             "nothing to check; --dry-run runs the steps on the emulator"
        return 0
    fi

    if [[ -n $built ]]; then
        build=$(cd "$built" && pwd)
    else
        build=$root/build
        "$root/scripts/build.sh" "$build" gcc >/dev/null
    fi
    if [[ -n $dir ]]; then
        make_bundle "$dir" "$dry"
        return
    fi

    local work=$build/gpu-check status=0
    rm -rf "$work"
    mkdir -p "$work"
    make_bundle "$work/bundle" "$dry"
    if [[ $dry == 1 ]]; then
        "$work/bundle/run.sh" --dry-run "$work/out" || status=$?
        [[ -z $out ]] || cp "$work/out/gpu-results.md" "$out"
    else
        "$work/bundle/run.sh" "$work/out" || status=$?
        record "$work/out/gpu-results.md" "${out:-$root/docs/gpu-results.md}"
    fi
    return "$status"
}

main "$@"
