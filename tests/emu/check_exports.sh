#!/usr/bin/env bash
# The emulated libcuda.so.1, libcudart.so.13, libcublas.so.13,
# libcublasLt.so.13 and libcudnn.so.9 against the real ones (for the driver, the toolkit's link
# stub's list): every function the real library exports is defined by the
# emulator under the same name and symbol version, nothing else is (but
# the driver stand-in's emu_* functions, the other stand-ins' way in), and
# the share the
# emulator implements (nm: T, a strong definition) rather than stubs (W,
# scripts/emu_stubs.py's weak stub) is printed.
# Each stand-in also has the real soname. The CUDA 12 copy of cuBLAS
# (libcublas.so.12) defines the 13 stand-in's functions under its own
# version node.
# usage: check_exports.sh CUDA_ROOT EMU_BUILD_DIR [LIST]
# (LIST: also print the stubbed names)
set -euo pipefail

cuda_root=$1
emu_dir=$2
list=${3:-}
status=0

# name@version of every function a library defines, one a line, sorted;
# kind is T (strong), W (weak) or i (indirect).
functions() {
    nm -D --defined-only --with-symbol-versions "$1" |
        awk -v want="$2" '$2 ~ want { print $3 }' | sort
}

for list in stubs/libcuda.so libcudart.so.13 libcublas.so.13 \
            libcublasLt.so.13 libcudnn.so.9; do
    real=$cuda_root/lib64/$list
    soname=${list#stubs/}
    [[ $soname == libcuda.so ]] && soname=libcuda.so.1
    emu=$emu_dir/$soname
    emu_soname=$(readelf -d "$emu" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    if [[ $emu_soname != "$soname" ]]; then
        echo "$emu: soname '$emu_soname', not $soname"
        status=1
    fi
    real_all=$(functions "$real" '^[TWi]$')
    emu_all=$(functions "$emu" '^[TWi]$' | grep -v '^emu_' || true)
    missing=$(comm -23 <(echo "$real_all") <(echo "$emu_all"))
    extra=$(comm -13 <(echo "$real_all") <(echo "$emu_all"))
    if [[ -n $missing || -n $extra ]]; then
        # A name in both lists differs only in its version.
        echo "$soname: exports that differ from the real library's" \
             "(name@version; - real only, + emulator only):"
        sed 's/^/  - /' <<<"$missing"
        sed 's/^/  + /' <<<"$extra"
        status=1
    fi
    total=$(grep -c . <<<"$real_all" || true)
    strong=$(comm -12 <(echo "$real_all") \
                      <(functions "$emu" '^[Ti]$') | grep -c . || true)
    stubbed=$(comm -12 <(echo "$real_all") \
                       <(functions "$emu" '^W$') | grep -c . || true)
    share=$(awk -v n="$strong" -v t="$total" \
                'BEGIN { printf "%.1f", t ? 100 * n / t : 0 }')
    echo "$soname: $strong of $total exported functions implemented" \
         "($share%), $stubbed stubbed"
    if [[ -n $list ]]; then
        comm -12 <(echo "$real_all") <(functions "$emu" '^W$') |
            sed 's/@.*//; s/^/  stub: /'
    fi
    if ((total == 0 || strong + stubbed != total)); then
        echo "$soname: $strong implemented and $stubbed stubbed do not" \
             "make the $total exported functions"
        status=1
    fi
done

# The CUDA 12 copy of cuBLAS: its soname, and the 13 stand-in's functions
# under its own version node (libcublas.so.12).
emu12=$emu_dir/libcublas.so.12
if [[ $(readelf -d "$emu12" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p') != \
      libcublas.so.12 ]]; then
    echo "$emu12: soname is not libcublas.so.12"
    status=1
fi
if ! diff <(functions "$emu_dir/libcublas.so.13" '^[TWi]$' |
            sed 's/@@libcublas\.so\.13$//') \
          <(functions "$emu12" '^[TWi]$' | sed 's/@@libcublas\.so\.12$//') \
          >/dev/null; then
    echo "libcublas.so.12: not the 13 stand-in's functions under" \
         "libcublas.so.12"
    status=1
fi
echo "libcublas.so.12: the 13 stand-in's" \
     "$(functions "$emu12" '^[TWi]$' | grep -c '@@libcublas\.so\.12$')" \
     "functions under libcublas.so.12"
exit $status
