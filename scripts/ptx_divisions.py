#!/usr/bin/env python3
"""Checks the kernels' PTX for integer divisions inside loops.

usage: ptx_divisions.py FILE.ptx...

An integer division or remainder costs tens of instructions on a GPU
(64-bit ones are subroutines of a hundred and more); inside an element loop
it makes a memory-bound kernel instruction-bound. For every .entry and
.func of each file this prints the integer divisions and remainders it
holds, the 64-bit ones (div.s64, div.u64, rem.s64, rem.u64) among them,
and how many lie inside a loop: on a path from a label back to it through
a later branch (`@%p bra $L__BB0_3;` or `bra.uni $L__BB0_3;` after
`$L__BB0_3:`). It exits 1 when one of any width lies inside a loop (nvcc
pairs each 64-bit division with a 32-bit one for small operands, and
either costs tens of instructions), 2 when a file cannot be read or holds
no function."""
import re
import sys

FUNCTION = re.compile(r'^\s*(?:\.visible\s+|\.weak\s+)?\.(entry|func)\s+'
                      r'(?:\([^)]*\)\s*)?(\w+)')
LABEL = re.compile(r'^\s*(\$?\w+):')
BRANCH = re.compile(r'^\s*(?:@!?%\w+\s+)?bra(?:\.uni)?\s+(\$?\w+)\s*;')
RETURN = re.compile(r'^\s*(?:@!?%\w+\s+)?(?:ret|exit|trap)\b')
DIVISION = re.compile(r'^\s*(?:@!?%\w+\s+)?(div|rem)\.([su](?:16|32|64))\b')
WIDE = ('s64', 'u64')


def functions(lines):
    """(kind, name, body lines) of every function: from its header to the
    brace that closes its body."""
    i = 0
    while i < len(lines):
        m = FUNCTION.match(lines[i])
        i += 1
        if not m:
            continue
        depth, body, opened = 0, [], False
        while i < len(lines):
            line = lines[i]
            i += 1
            depth += line.count('{') - line.count('}')
            opened = opened or '{' in line
            body.append(line)
            if opened and depth == 0:
                break
        yield m.group(1), m.group(2), body


def blocks(body):
    """The body's basic blocks: (label or None, first line, last line,
    successors' labels or block numbers)."""
    starts = [0]
    for i, line in enumerate(body):
        if LABEL.match(line) and i not in starts:
            starts.append(i)
        if (BRANCH.match(line) or RETURN.match(line)) and i + 1 < len(body):
            starts.append(i + 1)
    starts = sorted(set(starts))
    result = []
    for n, first in enumerate(starts):
        last = (starts[n + 1] if n + 1 < len(starts) else len(body)) - 1
        m = LABEL.match(body[first])
        result.append([m.group(1) if m else None, first, last, []])
    index = {b[0]: n for n, b in enumerate(result) if b[0]}
    for n, (label, first, last, succ) in enumerate(result):
        ends = None
        for line in body[first:last + 1]:
            m = BRANCH.match(line)
            if m:
                ends = m
            elif RETURN.match(line):
                ends = 'return'
        if ends == 'return':
            continue
        if ends and ends.group(1) in index:
            succ.append(index[ends.group(1)])
        conditional = ends and ends.group(0).lstrip().startswith('@')
        if (not ends or conditional) and n + 1 < len(result):
            succ.append(n + 1)
    return result


def reach(start, edges, stop=None):
    """Blocks reached from `start` along `edges`, not going on from
    `stop`."""
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n != stop:
            todo.extend(edges[n])
    return seen


def loop_lines(body):
    """Indices of the body's lines that lie inside a loop: for every branch
    back to an earlier block (the loop's header) from which the branch is
    reached again, the blocks on a path from the header to the branch. (A
    jump back to a block that does not lead to it again is no loop: the
    compiler places blocks out of order.)"""
    bl = blocks(body)
    succs = [b[3] for b in bl]
    preds = [[] for _ in bl]
    for n, b in enumerate(bl):
        for s in b[3]:
            preds[s].append(n)
    inside = set()
    for latch, b in enumerate(bl):
        for header in b[3]:
            if header > latch:
                continue
            ahead = reach(header, succs)
            if latch not in ahead:
                continue
            for n in ahead & reach(latch, preds, stop=header):
                inside.update(range(bl[n][1], bl[n][2] + 1))
    return inside


def check(path):
    """Prints one line per function of the file; returns the number of
    integer divisions and remainders inside loops, or None when the file
    holds no function."""
    with open(path) as f:
        lines = f.read().splitlines()
    found = False
    bad = 0
    for kind, name, body in functions(lines):
        found = True
        inside = loop_lines(body)
        total = wide = wide_in_loops = in_loops = 0
        for i, line in enumerate(body):
            m = DIVISION.match(line)
            if not m:
                continue
            total += 1
            in_loop = i in inside
            in_loops += in_loop
            if m.group(2) in WIDE:
                wide += 1
                wide_in_loops += in_loop
        bad += in_loops
        print('%s: %s %s: %d integer divisions/remainders (%d in loops), '
              '%d of them 64-bit (%d in loops)%s'
              % (path, kind, name, total, in_loops, wide, wide_in_loops,
                 '  <- division in a loop' if in_loops else ''))
    return bad if found else None


def main(paths):
    if not paths:
        sys.stderr.write(__doc__.split('\n\n')[1] + '\n')
        return 2
    bad = 0
    for path in paths:
        try:
            n = check(path)
        except OSError as e:
            sys.stderr.write('ptx_divisions.py: %s: %s\n'
                             % (path, e.strerror))
            return 2
        if n is None:
            sys.stderr.write('ptx_divisions.py: %s: no .entry or .func '
                             '(expected PTX from nvcc -ptx)\n' % path)
            return 2
        bad += n
    if bad:
        print('FAIL: %d integer divisions/remainders inside loops' % bad)
        return 1
    print('OK: no integer division or remainder inside a loop')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
