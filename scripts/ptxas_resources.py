#!/usr/bin/env python3
"""Checks the kernels' registers and stack from `ptxas -v`'s report.

usage: ptxas_resources.py [--max-registers N] LOG...
       ptxas_resources.py --log LOG -- NVCC ARGS...

The second form runs NVCC ARGS (a compilation with `-Xptxas -v`), writes
what ptxas reported (its standard error) to LOG and exits with nvcc's
status; the first checks such reports. For every function of each report
it prints the registers, the stack frame and the spill stores and loads.
A kernel of the shim's runs in blocks of 256 threads with at least 4 of
them resident per multiprocessor (AMP_KERNEL_BOUNDS, kernels/
amp_reduce.cuh): 65536 registers allow 64 per thread. It exits 1 when an
entry function uses more than N registers (64 unless told) or any
function has a stack frame or spills (local memory: a memory-bound
element loop pays for every byte of it), 2 when a report cannot be read
or names no entry function."""
import re
import subprocess
import sys

ENTRY = re.compile(r"Compiling entry function '(\w+)'")
PROPERTIES = re.compile(r'Function properties for (\w+)')
FRAME = re.compile(r'(\d+) bytes stack frame, (\d+) bytes spill stores, '
                   r'(\d+) bytes spill loads')
USED = re.compile(r'Used (\d+) registers')


def parse(text):
    """{name: {'entry', 'registers', 'stack', 'stores', 'loads'}} for every
    function the report describes."""
    functions, current = {}, None
    for line in text.splitlines():
        m = ENTRY.search(line) or PROPERTIES.search(line)
        if m:
            current = functions.setdefault(
                m.group(1), {'entry': False, 'registers': 0, 'stack': 0,
                             'stores': 0, 'loads': 0})
            if ENTRY.search(line):
                current['entry'] = True
            continue
        if current is None:
            continue
        m = FRAME.search(line)
        if m:
            current['stack'], current['stores'], current['loads'] = (
                int(v) for v in m.groups())
        m = USED.search(line)
        if m:
            current['registers'] = int(m.group(1))
    return functions


def check(path, max_registers):
    """Prints the report's functions; the exit status for it."""
    try:
        with open(path) as f:
            functions = parse(f.read())
    except OSError as e:
        print('%s: %s' % (path, e))
        return 2
    if not any(f['entry'] for f in functions.values()):
        print('%s: no entry function' % path)
        return 2
    status = 0
    print('%s:' % path)
    print('  %-28s %9s %6s %13s %12s' % ('function', 'registers', 'stack',
                                         'spill stores', 'spill loads'))
    for name, f in sorted(functions.items()):
        over = f['entry'] and f['registers'] > max_registers
        local = f['stack'] or f['stores'] or f['loads']
        print('  %-28s %9d %6d %13d %12d%s%s' % (
            name, f['registers'], f['stack'], f['stores'], f['loads'],
            '  <- over %d registers' % max_registers if over else '',
            '  <- local memory' if local else ''))
        if over or local:
            status = 1
    return status


def compile_log(argv):
    """--log LOG -- NVCC ARGS...: runs nvcc, keeps ptxas's report."""
    log, command = argv[1], argv[3:]
    done = subprocess.run(command, stderr=subprocess.PIPE,
                          universal_newlines=True)
    with open(log, 'w') as f:
        f.write(done.stderr)
    if done.returncode:
        sys.stderr.write(done.stderr)
    return done.returncode


def main(argv):
    if len(argv) > 3 and argv[0] == '--log' and argv[2] == '--':
        return compile_log(argv)
    max_registers = 64
    if len(argv) > 1 and argv[0] == '--max-registers':
        max_registers, argv = int(argv[1]), argv[2:]
    if not argv:
        print(__doc__)
        return 2
    return max(check(path, max_registers) for path in argv)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
