#!/usr/bin/env python3
"""check_layout.py shown failing: on a copy of the parts of the tree it
reads (src, hooks, kernels, docs, README.md, policy/README.md and what
their links name), it passes unmodified, and exits 1 with its message on
each injected violation: an include cycle between two files of one stage,
an include of a higher stage, a file over 1,100 lines that
docs/design.md's "Files past 1,000 lines" does not name (and passes again
once the section names it).

usage: selftest_layout.py REPO_ROOT
Prints one line per case; exits 1 when a case does not go as expected.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, 'check_layout.py')
sys.path.insert(0, HERE)
import check_layout  # noqa: E402  (its link reader names what to copy)

COPIED = ['src', 'hooks', 'kernels', 'docs', 'README.md',
          'policy/README.md']


def copy_tree(root, dest):
    """The parts check_layout.py reads, and each file or folder the
    documents link to (a folder as an empty one)."""
    for part in COPIED:
        src = os.path.join(root, part)
        dst = os.path.join(dest, part)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    real_root = os.path.realpath(root)
    for doc in check_layout.documents(root):
        for _, target in check_layout.relative_links(
                os.path.join(root, doc)):
            resolved = os.path.realpath(os.path.join(
                root, os.path.dirname(doc), target.split('#', 1)[0]))
            if not resolved.startswith(real_root + os.sep):
                continue
            rel = os.path.relpath(resolved, real_root)
            dst = os.path.join(dest, rel)
            if os.path.exists(dst):
                continue
            if os.path.isdir(resolved):
                os.makedirs(dst, exist_ok=True)
            elif os.path.isfile(resolved):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(resolved, dst)


def run_check(tree):
    r = subprocess.run([sys.executable, CHECK, tree], capture_output=True,
                       text=True)
    return r.returncode, r.stdout


def add_line(path, line, after=1):
    """Inserts line after line number `after` of path."""
    with open(path, encoding='utf-8') as f:
        lines = f.readlines()
    lines.insert(after, line + '\n')
    with open(path, 'w', encoding='utf-8') as f:
        f.writelines(lines)


def two_headers(tree, stage):
    names = sorted(n for n in os.listdir(os.path.join(tree, 'src', stage))
                   if n.endswith('.h'))
    return names[0], names[1]


def inject_cycle(tree):
    a, b = two_headers(tree, 'base')
    add_line(os.path.join(tree, 'src', 'base', a), f'#include "base/{b}"')
    add_line(os.path.join(tree, 'src', 'base', b), f'#include "base/{a}"')
    return [f'include cycle: ', f'src/base/{a}', f'src/base/{b}']


def inject_higher(tree):
    add_line(os.path.join(tree, 'src', 'base', 'log.c'),
             '#include "run/gemm.h"')
    return ['src/base/log.c:2: base/ includes "run/gemm.h" of a stage '
            'that is not lower']


def inject_long(tree):
    with open(os.path.join(tree, 'src', 'base', 'long.c'), 'w',
              encoding='utf-8') as f:
        f.write('/* A file too long. */\n' * 1101)
    return ['src/base/long.c:1: 1101 lines, over 1,100 and not in '
            'docs/design.md\'s "Files past 1,000 lines"']


def name_long(tree):
    """The section names the long file: the check passes again."""
    path = os.path.join(tree, 'docs', 'design.md')
    with open(path, encoding='utf-8') as f:
        lines = f.readlines()
    at = next((i for i, line in enumerate(lines)
               if line.startswith('#') and
               line.lstrip('#').strip() == check_layout.LONG_FILE_SECTION),
              None)
    if at is None:
        return  # no section: the check then fails, as it should
    lines.insert(at + 1, '\n`src/base/long.c` (1,101 lines): a test.\n')
    with open(path, 'w', encoding='utf-8') as f:
        f.writelines(lines)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split('\n\n')[-1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory(prefix='layout-selftest-') as tmp:
        clean = os.path.join(tmp, 'clean')
        copy_tree(root, clean)
        rc, out = run_check(clean)
        ok = rc == 0
        print(f'{"ok" if ok else "FAIL"}: the unmodified copy passes '
              f'(exit {rc})')
        if not ok:
            print(out, end='')
            failures += 1
        cases = [('an include cycle within base/', inject_cycle),
                 ('an include of a higher stage', inject_higher),
                 ('a long file not in design.md', inject_long)]
        for i, (what, inject) in enumerate(cases):
            tree = os.path.join(tmp, f'case{i}')
            shutil.copytree(clean, tree)
            expected = inject(tree)
            rc, out = run_check(tree)
            line = next((l for l in out.splitlines()
                         if all(e in l for e in expected)), None)
            ok = rc == 1 and line is not None
            print(f'{"ok" if ok else "FAIL"}: {what}: exit {rc}, '
                  f'{line if line else "no line with " + repr(expected)}')
            failures += not ok
            if inject is inject_long:
                name_long(tree)
                rc, out = run_check(tree)
                ok = rc == 0
                print(f'{"ok" if ok else "FAIL"}: the long file named in '
                      f'design.md: exit {rc}')
                if not ok:
                    print(out, end='')
                failures += not ok
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
