#!/usr/bin/env python3
"""The manual pages are well formed and say everything the program has.

- Each page renders with `groff -man -Tutf8 -ww` without one warning, and
  its .TH names the page, its section and the tool's version.
- ampshim(1): every command the tool's --help lists (and the commands of
  a command group, `ampshim policy --help`) has a synopsis line, a
  subsection and an EXIT STATUS entry; every option of each command's
  --help is in bold in its subsection, the tool's own in OPTIONS; every
  AMPSHIM_* setting (the names src/base/config.c reads, the Settings
  table of docs/reference.md, the --help environments) is in bold in
  ENVIRONMENT, and no AMPSHIM_* name there is unknown.
- ampshim-policy(5): every keyword of the parser's tables and every word
  it tests for (src/decide/policy_parse.c) is in bold; every example that
  is a whole policy (it has a `default` line) passes `ampshim policy
  check`.

usage: check_man.py SOURCE_ROOT AMPSHIM_TOOL
Prints one line per problem and exits 1 when there is any; prints what it
checked and exits 0 otherwise.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The parser's tables whose every string is a keyword
# (src/decide/policy_parse.c).
POLICY_TABLES = ['amp_cmp_names', 'amp_op_values', 'amp_layout_values',
                 'amp_epi_values', 'amp_fields', 'amp_family_names',
                 'amp_actions']
# Characters that end a token inside a run of bold text.
TOKEN_SPLIT = re.compile(r'[\s(),;\[\]|"\']+')


def render(page, problems):
    """The page rendered for a terminal with overstriking (bold: c BS c,
    italic: _ BS c); warnings are problems."""
    groff = shutil.which('groff')
    if groff is None:
        problems.append('groff is missing (scripts/setup.sh installs '
                        'groff-base)')
        return ''
    env = dict(os.environ, LC_ALL='C.UTF-8', MANWIDTH='80')
    r = subprocess.run([groff, '-man', '-Tutf8', '-ww', '-P-c', page],
                       capture_output=True, env=env)
    name = os.path.basename(page)
    if r.returncode != 0:
        problems.append(f'{name}: groff exited with status {r.returncode}')
    for line in r.stderr.decode('utf-8', 'replace').splitlines():
        problems.append(f'{name}: groff: {line}')
    return r.stdout.decode('utf-8', 'replace')


def decode(line):
    """(plain text, bold flags) of one rendered line."""
    text, bold = [], []
    i = 0
    while i < len(line):
        if i + 2 < len(line) and line[i + 1] == '\b':
            first, c = line[i], line[i + 2]
            i += 3
            while i + 1 < len(line) and line[i] == '\b':
                i += 2
            text.append(c)
            bold.append(first == c)
        else:
            text.append(line[i])
            bold.append(False)
            i += 1
    return ''.join(text), bold


class Page:
    """A rendered page: its lines, sections (.SH) and subsections (.SS)."""

    def __init__(self, rendered):
        self.lines = [decode(line) for line in rendered.splitlines()]
        heads = []              # (line index, indent, name)
        for i, (text, bold) in enumerate(self.lines):
            name = text.strip()
            indent = len(text) - len(text.lstrip())
            if name and indent in (0, 3) and all(
                    b for c, b in zip(text, bold) if not c.isspace()):
                heads.append((i, indent, name))
        heads.append((len(self.lines), 0, None))
        # A section (indent 0) runs to the next one; a subsection (indent
        # 3) to the next heading.
        self.sections, self.subsections = {}, {}
        for k, (first, indent, name) in enumerate(heads[:-1]):
            last = next(i for i, ind, _ in heads[k + 1:] if ind <= indent)
            (self.sections if indent == 0 else self.subsections)[name] = \
                (first, last)

    def text(self, span=None):
        first, last = span or (0, len(self.lines))
        return ' '.join(t for t, _ in self.lines[first:last])

    def bold(self, span=None):
        """The tokens of the bold text in span (the whole page)."""
        first, last = span or (0, len(self.lines))
        tokens = set()
        for text, bold in self.lines[first:last]:
            run = ''
            for c, b in zip(text, bold):
                if b:
                    run += c
                else:
                    tokens.update(t for t in TOKEN_SPLIT.split(run) if t)
                    run = ''
            tokens.update(t for t in TOKEN_SPLIT.split(run) if t)
        return tokens


def help_of(tool, words, problems):
    r = subprocess.run([tool] + words + ['--help'], capture_output=True,
                       text=True)
    if r.returncode != 0:
        problems.append(f'ampshim {" ".join(words)} --help: status '
                        f'{r.returncode}')
    return r.stdout


def help_block(text, title):
    """The lines of a --help section ('commands:', 'options:', ...)."""
    out, inside = [], False
    for line in text.splitlines():
        if line == title:
            inside = True
        elif inside and (not line.strip() or not line.startswith(' ')):
            break
        elif inside:
            out.append(line)
    return out


def commands_of(tool, words, problems):
    """[(command words, its --help)] for every command under words,
    descending into command groups."""
    text = help_of(tool, words, problems)
    names = [line.split()[0] for line in help_block(text, 'commands:')
             if line.startswith('  ') and not line.startswith('   ')]
    if not names:
        return [(words, text)]
    out = []
    for name in names:
        out += commands_of(tool, words + [name], problems)
    return out


def options_of(help_text):
    """Every -x and --long option of a --help's options: section."""
    opts = []
    for line in help_block(help_text, 'options:'):
        m = re.match(r'\s+((?:-\w|--[\w-]+)(?:,\s*(?:-\w|--[\w-]+))*)', line)
        if m:
            opts += re.split(r',\s*', m.group(1))
    return opts


def settings(root, help_texts, problems):
    """The AMPSHIM_* names: those config.c reads, the Settings table's of
    docs/reference.md, and the --help environments' ('AMPSHIM_*' aside)."""
    names = set()
    with open(os.path.join(root, 'src/base/config.c')) as f:
        from_config = set(re.findall(r'"(AMPSHIM_[A-Z0-9_]+)"', f.read()))
    if len(from_config) < 5:
        problems.append(f'src/base/config.c: only {sorted(from_config)} '
                        'found; has the way it reads settings changed?')
    names |= from_config
    with open(os.path.join(root, 'docs/reference.md')) as f:
        reference = f.read()
    table = re.search(r'^## Settings\n(.*?)^#', reference, re.M | re.S)
    if not table:
        problems.append('docs/reference.md: no Settings section')
    else:
        from_table = set(re.findall(r'^\| `(AMPSHIM_[A-Z0-9_]+)`',
                                    table.group(1), re.M))
        if not from_table:
            problems.append('docs/reference.md: the Settings section has '
                            'no table of AMPSHIM_* variables')
        names |= from_table
    for text in help_texts:
        for line in help_block(text, 'environment:'):
            names |= set(re.findall(r'\b(AMPSHIM_[A-Z0-9_]+)\b', line))
    return names


def policy_keywords(root, problems):
    with open(os.path.join(root, 'src/decide/policy_parse.c')) as f:
        src = f.read()
    words = set()
    for table in POLICY_TABLES:
        m = re.search(r'\b' + table + r'\s*\[[^\]]*\]\s*=\s*\{(.*?)\};',
                      src, re.S)
        found = re.findall(r'"([^"]+)"', m.group(1)) if m else []
        if not found:
            problems.append(f'src/decide/policy_parse.c: no table {table} '
                            'with strings; update POLICY_TABLES')
        words |= set(found)
    words |= set(re.findall(r'amp_tok_is\(\s*&ps->tok,\s*"([^"]+)"\)', src))
    words |= set(re.findall(r'amp_parse_binary\([^;]*?"(\w+)"', src))
    return words


def check_th(name, section, page_path, version, problems):
    with open(page_path) as f:
        th = next((line for line in f if line.startswith('.TH ')), '')
    want = f'.TH {name.upper().replace("-", chr(92) + "-")} {section} '
    if not th.startswith(want):
        problems.append(f'{os.path.basename(page_path)}: .TH line {th!r} '
                        f'does not start {want!r}')
    if f'"ampshim {version}"' not in th:
        problems.append(f'{os.path.basename(page_path)}: .TH does not name '
                        f'"ampshim {version}" (ampshim --version)')


def check_tool_page(root, tool, page_path, problems):
    page = Page(render(page_path, problems))
    for s in ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'COMMANDS', 'OPTIONS',
              'ENVIRONMENT', 'FILES', 'EXIT STATUS', 'EXAMPLES', 'SEE ALSO']:
        if s not in page.sections:
            problems.append(f'ampshim.1: no {s} section')
    synopsis = ' '.join(page.text(page.sections.get('SYNOPSIS', (0, 0))).split())
    exit_text = ' '.join(page.text(page.sections.get('EXIT STATUS', (0, 0))).split())
    commands = commands_of(tool, [], problems)
    nopts = 0
    for words, text in commands:
        command = 'ampshim ' + ' '.join(words)
        if command not in synopsis:
            problems.append(f'ampshim.1: SYNOPSIS lacks {command}')
        if command not in exit_text:
            problems.append(f'ampshim.1: EXIT STATUS lacks {command}')
        span = page.subsections.get(command)
        if span is None:
            problems.append(f'ampshim.1: no subsection "{command}"')
            continue
        bold = page.bold(span)
        for opt in options_of(text):
            nopts += 1
            if opt not in bold:
                problems.append(f'ampshim.1: {command}: option {opt} '
                                f'({command} --help) is not in its '
                                'subsection, in bold')
    top = help_of(tool, [], problems)
    bold = page.bold(page.sections.get('OPTIONS', (0, 0)))
    for opt in options_of(top):
        nopts += 1
        if opt not in bold:
            problems.append(f'ampshim.1: option {opt} (ampshim --help) is '
                            'not in OPTIONS, in bold')
    names = settings(root, [top] + [t for _, t in commands], problems)
    env = page.bold(page.sections.get('ENVIRONMENT', (0, 0)))
    for name in sorted(names):
        if name not in env:
            problems.append(f'ampshim.1: setting {name} is not in '
                            'ENVIRONMENT, in bold')
    for name in sorted(t for t in page.bold()
                       if t.startswith('AMPSHIM_') and t != 'AMPSHIM_*'):
        if re.sub(r'=.*', '', name) not in names:
            problems.append(f'ampshim.1: {name} is no setting the shim or '
                            'the tool reads')
    return (f'ampshim.1: {len(commands)} commands '
            f'({", ".join(" ".join(w) for w, _ in commands)}), {nopts} '
            f'options, {len(names)} settings')


def check_policy_page(root, tool, page_path, problems):
    page = Page(render(page_path, problems))
    for s in ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'GRAMMAR', 'ERRORS',
              'EXAMPLES', 'FILES', 'SEE ALSO']:
        if s not in page.sections:
            problems.append(f'ampshim-policy.5: no {s} section')
    bold = page.bold()
    words = policy_keywords(root, problems)
    for word in sorted(words):
        if word not in bold:
            problems.append(f'ampshim-policy.5: keyword {word!r} '
                            '(src/decide/policy_parse.c) is not in bold')
    # The examples (.EX blocks) that are whole policies must be valid.
    with open(page_path) as f:
        blocks = re.findall(r'^\.EX\n(.*?)^\.EE\n', f.read(), re.M | re.S)
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, block in enumerate(blocks):
            text = block.replace('\\-', '-').replace('\\(aq', "'")
            if not re.search(r'^default [\w:-]+\s*$', text, re.M):
                continue
            path = os.path.join(tmp, f'example{n + 1}.policy')
            with open(path, 'w') as f:
                f.write(text)
            r = subprocess.run([tool, 'policy', 'check', path],
                               capture_output=True, text=True)
            checked += 1
            if r.returncode != 0:
                problems.append(f'ampshim-policy.5: example {n + 1} is not '
                                f'a valid policy: {r.stderr.strip()}')
    if checked < 2:
        problems.append(f'ampshim-policy.5: {checked} whole policies among '
                        'the examples, expected 2')
    return (f'ampshim-policy.5: {len(words)} keywords, {checked} example '
            'policies valid')


def main():
    root, tool = sys.argv[1], sys.argv[2]
    problems = []
    r = subprocess.run([tool, '--version'], capture_output=True, text=True)
    version = r.stdout.split()[-1] if r.stdout.split() else '?'
    pages = {'ampshim': ('1', check_tool_page),
             'ampshim-policy': ('5', check_policy_page)}
    said = []
    for name, (section, check) in pages.items():
        path = os.path.join(root, 'man', f'{name}.{section}')
        check_th(name, section, path, version, problems)
        said.append(check(root, tool, path, problems))
    for p in problems:
        print(p)
    if problems:
        return 1
    for s in said:
        print(s)
    return 0


if __name__ == '__main__':
    sys.exit(main())
