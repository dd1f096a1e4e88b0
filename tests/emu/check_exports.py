#!/usr/bin/env python3
"""Compares the dynamic exports of an emulated library with the real one's:
the same defined names under the same version nodes, and the same soname.
usage: check_exports.py NM READELF EMULATED REAL (exit 77 without REAL)."""
import os
import subprocess
import sys


def exports(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def soname(readelf, lib):
    out = subprocess.run([readelf, "-d", "-W", lib], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "(SONAME)" in line:
            return line.split("[", 1)[1].rstrip("]")
    return None


def main():
    nm, readelf, ours, real = sys.argv[1:5]
    if not os.path.exists(real):
        print(f"{real} not found: nothing to compare with")
        return 77
    ok = True
    if soname(readelf, ours) != soname(readelf, real):
        print(f"soname {soname(readelf, ours)} != {soname(readelf, real)}")
        ok = False
    mine, theirs = exports(nm, ours), exports(nm, real)
    for name in sorted(theirs - mine):
        print(f"missing: {name}")
        ok = False
    for name in sorted(mine - theirs):
        print(f"extra: {name}")
        ok = False
    print(f"{len(mine)} exports, {len(theirs)} in {real}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
