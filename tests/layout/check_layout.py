#!/usr/bin/env python3
"""The repository's layout rules, checked from its files.

- Stages: every quoted include in src/ and hooks/ names a header of the
  file's own stage or of a lower one (docs/design.md), stage-qualified
  ("decide/policy.h"); a bare name must be a kernels/ header or, in hooks/,
  one of hooks/' own. No include cycle between files, within a stage as
  between stages.
- Sizes: every .c and .h of src/ and hooks/ over 1,100 lines is named, by
  its path, in docs/design.md's section "Files past 1,000 lines", which
  says why it stays one file.
- Links: every relative link in README.md, docs/*.md and policy/README.md
  resolves to a file or folder inside the repository.
- Documents: README.md has at most 300 lines, and its first 40 show
  `ampshim run`; every docs/*.md is reachable from README.md by links,
  directly or through the documents it links (docs/, policy/README.md).

tests/layout/selftest_layout.py (test layout_selftest) shows each rule
failing on a copy of the tree with a violation injected.

usage: check_layout.py REPO_ROOT
Prints one line per violation (file:line: what) and exits 1 when there is
any; prints what it checked and exits 0 otherwise.
"""
import os
import re
import sys

# Lowest first. process/ and tool/ are both top-level in src/ and never
# include each other: one is preloaded, the other is the command.
STAGES = {
    'base': 1,
    'device': 2,
    'decide': 3,
    'measure': 4,
    'run': 5,
    'process': 6,
    'tool': 6,
}
HOOKS_RANK = 7
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
README_MAX_LINES = 300
# A source file over this many lines needs its reason in docs/design.md.
LONG_FILE_LINES = 1100
LONG_FILE_SECTION = 'Files past 1,000 lines'
HEADING = re.compile(r'^(#+)\s+(.*?)\s*$')
SOURCE_PATH = re.compile(r'\b(?:src|hooks)/[\w/.-]+\.[ch]\b')


def source_files(root, folder):
    top = os.path.join(root, folder)
    for dirpath, _, names in os.walk(top):
        for name in sorted(names):
            if name.endswith(('.c', '.h')):
                yield os.path.join(dirpath, name)


def stage_of(root, path):
    """(folder, rank) of a file in src/ or hooks/."""
    rel = os.path.relpath(path, root).split(os.sep)
    if rel[0] == 'hooks':
        return 'hooks', HOOKS_RANK
    if len(rel) < 3 or rel[1] not in STAGES:
        return None, None
    return rel[1], STAGES[rel[1]]


def check_includes(root, problems):
    kernels = set(os.listdir(os.path.join(root, 'kernels')))
    hooks = set(os.listdir(os.path.join(root, 'hooks')))
    edges = {}
    files = list(source_files(root, 'src')) + list(source_files(root, 'hooks'))
    for path in files:
        rel = os.path.relpath(path, root)
        folder, rank = stage_of(root, path)
        if folder is None:
            problems.append(f'{rel}:1: not in a stage folder of src/ '
                            f'({", ".join(STAGES)})')
            continue
        edges[rel] = []
        with open(path, encoding='utf-8') as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                where = f'{rel}:{lineno}'
                if '/' not in name:
                    if name in kernels:
                        continue
                    if folder == 'hooks' and name in hooks:
                        edges[rel].append(os.path.join('hooks', name))
                        continue
                    problems.append(f'{where}: "{name}": name the stage '
                                    f'("base/{name}")')
                    continue
                target = name.split('/')[0]
                if target not in STAGES:
                    problems.append(f'{where}: "{name}": {target}/ is not '
                                    f'a stage of src/')
                    continue
                if not os.path.isfile(os.path.join(root, 'src', name)):
                    problems.append(f'{where}: "{name}": no such header '
                                    f'in src/')
                    continue
                if target != folder and STAGES[target] >= rank:
                    problems.append(f'{where}: {folder}/ includes "{name}" '
                                    f'of a stage that is not lower')
                edges[rel].append(os.path.join('src', name))
    check_cycles(edges, problems)
    return len(files)


def check_cycles(edges, problems):
    state = {}

    def visit(node, stack):
        state[node] = 'open'
        stack.append(node)
        for nxt in edges.get(node, []):
            if state.get(nxt) == 'open':
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append(f'{node}:1: include cycle: '
                                f'{" -> ".join(cycle)}')
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 'done'

    for node in sorted(edges):
        if node not in state:
            visit(node, [])


def long_files_named(root):
    """The source paths named in docs/design.md's section "Files past
    1,000 lines": its text up to the next heading of its level or above."""
    names = set()
    level = 0
    in_code = False
    with open(os.path.join(root, 'docs', 'design.md'),
              encoding='utf-8') as f:
        for line in f:
            if line.lstrip().startswith('```'):
                in_code = not in_code
            m = None if in_code else HEADING.match(line)
            if m and level and len(m.group(1)) <= level:
                break
            if m and m.group(2) == LONG_FILE_SECTION:
                level = len(m.group(1))
            elif level:
                names.update(SOURCE_PATH.findall(line))
    return names


def check_sizes(root, problems):
    """Every file of src/ and hooks/ over LONG_FILE_LINES lines is named
    in design.md's section; returns how many are over."""
    named = long_files_named(root)
    over = 0
    for path in list(source_files(root, 'src')) + \
            list(source_files(root, 'hooks')):
        rel = os.path.relpath(path, root)
        with open(path, encoding='utf-8') as f:
            nlines = sum(1 for _ in f)
        if nlines <= LONG_FILE_LINES:
            continue
        over += 1
        if rel not in named:
            problems.append(f'{rel}:1: {nlines} lines, over 1,100 and not '
                            f'in docs/design.md\'s "{LONG_FILE_SECTION}"')
    return over


def documents(root):
    docs = ['README.md', 'policy/README.md']
    docs += sorted(os.path.join('docs', n)
                   for n in os.listdir(os.path.join(root, 'docs'))
                   if n.endswith('.md'))
    return docs


def relative_links(path):
    """(line number, target) of each relative link of a Markdown file
    outside code blocks; targets within the file itself (#...) left out."""
    in_code = False
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            if line.lstrip().startswith('```'):
                in_code = not in_code
                continue
            if in_code:
                continue
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r'^[a-z][a-z0-9+.-]*:', target) or \
                        target.startswith('#'):
                    continue
                yield lineno, target


def check_links(root, problems):
    docs = documents(root)
    real_root = os.path.realpath(root)
    count = 0
    for doc in docs:
        path = os.path.join(root, doc)
        for lineno, target in relative_links(path):
            count += 1
            file_part = target.split('#', 1)[0]
            resolved = os.path.realpath(
                os.path.join(os.path.dirname(path), file_part))
            inside = resolved == real_root or \
                resolved.startswith(real_root + os.sep)
            if not inside:
                problems.append(f'{doc}:{lineno}: link "{target}" '
                                f'leaves the repository')
            elif not os.path.exists(resolved):
                problems.append(f'{doc}:{lineno}: link "{target}" '
                                f'resolves to nothing')
    return len(docs), count


def check_readme_start(root, problems):
    with open(os.path.join(root, 'README.md'), encoding='utf-8') as f:
        head = [next(f, '') for _ in range(40)]
    if not any('ampshim run' in line for line in head):
        problems.append('README.md:40: `ampshim run` is not in the first '
                        '40 lines')


def check_readme_length(root, problems):
    with open(os.path.join(root, 'README.md'), encoding='utf-8') as f:
        nlines = sum(1 for _ in f)
    if nlines > README_MAX_LINES:
        problems.append(f'README.md:{README_MAX_LINES + 1}: {nlines} lines, '
                        f'more than {README_MAX_LINES}: move the rest to '
                        f'docs/')
    return nlines


def check_reachable(root, problems):
    """Every document is reachable from README.md by following links
    between Markdown files of the repository."""
    real_root = os.path.realpath(root)
    seen = {'README.md'}
    todo = ['README.md']
    while todo:
        doc = todo.pop()
        path = os.path.join(root, doc)
        for _, target in relative_links(path):
            file_part = target.split('#', 1)[0]
            if not file_part.endswith('.md'):
                continue
            resolved = os.path.realpath(
                os.path.join(os.path.dirname(path), file_part))
            if not resolved.startswith(real_root + os.sep) or \
                    not os.path.isfile(resolved):
                continue  # check_links names it
            rel = os.path.relpath(resolved, real_root)
            if rel not in seen:
                seen.add(rel)
                todo.append(rel)
    docs = documents(root)
    for doc in docs:
        if doc not in seen:
            problems.append(f'{doc}:1: not reachable from README.md: link '
                            f'it from README.md or from a document linked '
                            f'there')
    return len(docs)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split('\n\n')[-1], file=sys.stderr)
        return 2
    root = sys.argv[1]
    problems = []
    nfiles = check_includes(root, problems)
    nlong = check_sizes(root, problems)
    ndocs, nlinks = check_links(root, problems)
    check_readme_start(root, problems)
    nreadme = check_readme_length(root, problems)
    check_reachable(root, problems)
    for p in problems:
        print(p)
    if problems:
        print(f'layout: {len(problems)} problems', file=sys.stderr)
        return 1
    print(f'layout: {nfiles} source files within their stages, no include '
          f'cycle, {nlong} over {LONG_FILE_LINES} lines each with its reason '
          f'in docs/design.md; {nlinks} relative links in {ndocs} documents resolve, '
          f'all {ndocs} reachable from README.md; README.md {nreadme} '
          f'lines (at most {README_MAX_LINES})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
