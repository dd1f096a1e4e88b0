#!/usr/bin/env python3
"""Runs a check program (examples/solver_check, graph_nodes, deep_queue,
conv_bench) and asserts its "result: KEY=VALUE ..." lines, as the GPU
check's script reads them.

usage: check_result_lines.py [--lines N] [--expect KEY:ALT[|ALT...]]...
                             [--preload LIB] -- PROGRAM [ARGS...]
  --lines N   exactly N result lines
  --preload   runs the program with LIB in LD_PRELOAD, after the
              sanitizer runtime that AMP_TEST_PRELOAD_FIRST names (a
              sanitized build's tests set it)
  --expect    every result line that has KEY has a value matching one of
              the alternatives, and at least one line has KEY; an
              alternative is a literal (ok, 0, na) or a comparison with a
              number (>0, >=1, <1e-3)
Exits 77 when the program does (a skip), 0 when it exits 0 and every
expectation holds, 1 otherwise with one line per problem. The program's
output is printed first.
"""
import argparse
import operator
import os
import re
import subprocess
import sys

COMPARISON = re.compile(r'^(>=|<=|>|<)(.+)$')
OPERATORS = {'>=': operator.ge, '<=': operator.le, '>': operator.gt,
             '<': operator.lt}


def matches(value, alternative):
    m = COMPARISON.match(alternative)
    if not m:
        return value == alternative
    try:
        return OPERATORS[m.group(1)](float(value), float(m.group(2)))
    except ValueError:
        return False


def parse_results(stdout):
    """The result lines as dicts, and the malformed ones."""
    results, bad = [], []
    for line in stdout.splitlines():
        if not line.startswith('result:'):
            continue
        fields = {}
        for word in line[len('result:'):].split():
            key, eq, value = word.partition('=')
            if not eq or not key or not value or key in fields:
                bad.append(line)
                break
            fields[key] = value
        results.append(fields)
    return results, bad


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--lines', type=int)
    parser.add_argument('--expect', action='append', default=[])
    parser.add_argument('--preload')
    parser.add_argument('command', nargs='+')
    args = parser.parse_args()

    env = dict(os.environ)
    if args.preload:
        first = env.get('AMP_TEST_PRELOAD_FIRST', '')
        env['LD_PRELOAD'] = ' '.join(p for p in (first, args.preload) if p)
    run = subprocess.run(args.command, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, check=False,
                         env=env)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    if run.returncode == 77:
        return 77
    problems = []
    if run.returncode != 0:
        problems.append(f'exit status {run.returncode}, not 0')
    results, bad = parse_results(run.stdout)
    problems += [f'malformed result line: {line}' for line in bad]
    if args.lines is not None and len(results) != args.lines:
        problems.append(f'{len(results)} result lines, not {args.lines}')
    for expect in args.expect:
        key, _, alternatives = expect.partition(':')
        seen = [r[key] for r in results if key in r]
        if not seen:
            problems.append(f'no result line has {key}')
        for value in seen:
            if not any(matches(value, a) for a in alternatives.split('|')):
                problems.append(f'{key}={value}, not {alternatives}')
    for p in problems:
        print(f'check_result_lines: {p}', file=sys.stderr)
    if not problems:
        print(f'check_result_lines: {len(results)} result lines, '
              f'{len(args.expect)} expectations hold')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
