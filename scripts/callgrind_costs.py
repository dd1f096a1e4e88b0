#!/usr/bin/env python3
"""Sums callgrind profiles by object, for scripts/bench_overhead.sh.

usage: callgrind_costs.py OBJECT FILE...

For each callgrind output FILE, one line:
  FILE ir_all=N ir_object=N allocs_all=N allocs_object=N
ir_all is every instruction the profile collected, ir_object the
instructions executed in OBJECT's own code (exclusive cost: calls out of
it are not counted), allocs_all the calls of malloc, calloc, realloc,
aligned_alloc, posix_memalign and memalign from anywhere, allocs_object
those made from OBJECT's code.
"""
import os
import sys

ALLOCATORS = {"malloc", "calloc", "realloc", "aligned_alloc",
              "posix_memalign", "memalign"}


def named(table, value):
    """Resolves callgrind's name compression: "(id) name" defines id,
    "(id)" refers to it."""
    value = value.strip()
    if value.startswith("("):
        end = value.index(")")
        key, rest = value[1:end], value[end + 1:].strip()
        if rest:
            table[key] = rest
        return table.get(key, rest)
    return value


def costs(path, target):
    obs, fns = {}, {}
    ob = cfn = ""
    ir_all = ir_obj = allocs_all = allocs_obj = 0
    after_calls = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if after_calls:
                after_calls = False  # the call's inclusive cost: skip
                continue
            if line.startswith("ob="):
                ob = os.path.basename(named(obs, line[3:]))
            elif line.startswith("cob="):
                named(obs, line[4:])
            elif line.startswith("fn="):
                named(fns, line[3:])
            elif line.startswith("cfn="):
                cfn = named(fns, line[4:]).split("'")[0]
            elif line.startswith("calls="):
                after_calls = True
                if cfn in ALLOCATORS:
                    n = int(line[6:].split()[0])
                    allocs_all += n
                    if ob == target:
                        allocs_obj += n
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                if len(parts) >= 2:
                    ir_all += int(parts[1])
                    if ob == target:
                        ir_obj += int(parts[1])
    return ir_all, ir_obj, allocs_all, allocs_obj


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    for path in argv[2:]:
        ir_all, ir_obj, allocs_all, allocs_obj = costs(path, argv[1])
        print(f"{path} ir_all={ir_all} ir_object={ir_obj} "
              f"allocs_all={allocs_all} allocs_object={allocs_obj}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
