#!/usr/bin/env python3
"""Writes the emulator's weak stubs for every function a real NVIDIA library
exports (libcuda.so.1, libcudart.so.13, libcublas.so.13, libcublasLt.so.13,
libcudnn.so.9).

The names come from the real library's dynamic symbol table (nm -D
--defined-only), the return types from the vendor headers after the C
preprocessor. Each stub is a weak definition: a strong one in the
emulator's own sources replaces it at link time, so nothing is listed by
hand. A stub prints one line on stderr the first time it is called and
returns the library's not-supported status, or, where the header gives
another return type, a value that is never a plausible result (NaN for
floating results, 0 or NULL otherwise; a legacy cuBLAS function also
leaves CUBLAS_STATUS_NOT_SUPPORTED for cublasGetError).

usage: emu_stubs.py LIB --cuda-root DIR --nm NM --output FILE -- CC...
"""
import argparse
import re
import subprocess
import sys

# What each library's stubs need. `headers` declare the functions;
# `legacy_header` (cuBLAS) declares, besides them, the legacy API whose
# functions report errors through cublasGetError, set by `legacy_error`.
LIBRARIES = {
    # The driver's export list is the toolkit's link stub's (the driver
    # itself comes with the GPU's kernel module, not the toolkit); its
    # functions are not versioned.
    'cuda': {
        'soname': 'libcuda.so.1',
        'path': 'lib64/stubs/libcuda.so',
        'headers': ['cuda.h'],
        'legacy_header': None,
        'includes': ['<cuda.h>'],
        'status': 'CUresult',
        'status_types': {'CUresult'},
        'not_supported': 'CUDA_ERROR_NOT_SUPPORTED',
        'legacy_error': None,
        'stub_test': 'emu_stub_address',
    },
    'cudart': {
        'soname': 'libcudart.so.13',
        'headers': ['cuda_runtime_api.h'],
        'legacy_header': None,
        'includes': ['<cuda_runtime_api.h>'],
        'status': 'cudaError_t',
        'status_types': {'cudaError_t', 'cudaError'},
        'not_supported': 'cudaErrorNotSupported',
        'legacy_error': None,
    },
    'cublas': {
        'soname': 'libcublas.so.13',
        'headers': ['cublas_api.h', 'cublasXt.h'],
        'legacy_header': 'cublas.h',
        'includes': ['<cublas.h>', '"cublas_handle.h"'],
        'status': 'cublasStatus_t',
        'status_types': {'cublasStatus_t', 'cublasStatus'},
        'not_supported': 'CUBLAS_STATUS_NOT_SUPPORTED',
        'legacy_error': 'emu_blas_legacy_error',
    },
    'cublasLt': {
        'soname': 'libcublasLt.so.13',
        'headers': ['cublasLt.h'],
        'legacy_header': None,
        'includes': ['<cublasLt.h>'],
        'status': 'cublasStatus_t',
        'status_types': {'cublasStatus_t'},
        'not_supported': 'CUBLAS_STATUS_NOT_SUPPORTED',
        'legacy_error': None,
    },
    'cudnn': {
        'soname': 'libcudnn.so.9',
        'headers': ['cudnn.h'],
        'legacy_header': None,
        'includes': ['<cudnn.h>'],
        'status': 'cudnnStatus_t',
        'status_types': {'cudnnStatus_t'},
        'not_supported': 'CUDNN_STATUS_NOT_SUPPORTED',
        'legacy_error': None,
    },
}

FLOATING = {'float', 'double'}
COMPLEX = {'cuComplex', 'cuFloatComplex', 'cuDoubleComplex'}
INTEGER = {'int', 'unsigned', 'unsigned int', 'long', 'unsigned long',
           'long long', 'unsigned long long', 'size_t', 'int64_t',
           'uint64_t', 'int32_t', 'uint32_t'}


def exported_functions(nm, library):
    """The function names the library defines in its dynamic symbol table,
    and the names of its other definitions (data, version nodes)."""
    out = subprocess.run([nm, '-D', '--defined-only', library],
                         check=True, capture_output=True, text=True).stdout
    functions, others = [], []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        kind, name = fields[1], fields[2].split('@')[0]
        is_function = kind in {'T', 't', 'W', 'i'}
        (functions if is_function else others).append((kind, name))
    return sorted({n for _, n in functions}), sorted(set(others))


def preprocess(cc, include_dir, header):
    source = '#include <%s>\n' % header
    return subprocess.run(cc + ['-E', '-P', '-I', include_dir, '-x', 'c',
                                '-'], input=source, check=True,
                          capture_output=True, text=True).stdout


def strip_attributes(text):
    """Removes __attribute__((...)) and __declspec(...), parentheses
    balanced."""
    out, i = [], 0
    pattern = re.compile(r'\b(__attribute__|__declspec)\s*\(')
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            return ''.join(out)
        out.append(text[i:m.start()])
        depth, j = 0, m.end() - 1
        while j < len(text):
            depth += {'(': 1, ')': -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        i = j


def top_level_chunks(text):
    """Splits preprocessed C into top-level declarations: bodies in braces
    are dropped, a function body ends its definition."""
    chunks, cur, depth = [], [], 0
    for ch in text:
        if ch == '{':
            if depth == 0:
                cur.append('{}')
            depth += 1
            continue
        if ch == '}':
            depth -= 1
            if depth == 0 and ''.join(cur[:-1]).rstrip().endswith(')'):
                chunks.append(''.join(cur))
                cur = []
            continue
        if depth:
            continue
        if ch == ';':
            chunks.append(''.join(cur))
            cur = []
        else:
            cur.append(ch)
    return chunks


DECLARATION = re.compile(
    r'^(?P<ret>[^(){}]*?)\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)\s*$',
    re.S)


def declared_return_types(text, wanted):
    """Maps each wanted name declared as a function in `text` to its return
    type, whitespace normalised, storage class and attributes removed."""
    found = {}
    for chunk in top_level_chunks(strip_attributes(text)):
        m = DECLARATION.match(chunk.strip())
        if not m or m.group('name') not in wanted:
            continue
        ret = ' '.join(m.group('ret').split())
        ret = re.sub(r'\b(extern|static|inline|__inline__)\b', '', ret)
        ret = ' '.join(ret.replace('*', ' * ').split()).replace(' *', '*')
        found[m.group('name')] = ret
    return found


def c_string(s):
    return '"%s"' % s.replace('\\', '\\\\').replace('"', '\\"').replace(
        '\n', '\\n')


def stub_body(lib, ret, legacy):
    """The stub's declarations, its statements after the message, and the
    words saying what it returns."""
    base = ret.replace('const ', '').strip()
    status = lib['not_supported']
    decls, lines, error = [], [], ''
    if legacy and base not in lib['status_types']:
        lines.append('%s(%s);' % (lib['legacy_error'], status))
        error = 'cublasGetError: %s' % status
    if base in lib['status_types']:
        lines.append('return %s;' % status)
        what = status
    elif base == 'void':
        what = '' if error else 'nothing'
    elif base in FLOATING:
        lines.append('return NAN;')
        what = 'NaN'
    elif base in COMPLEX:
        decls.append('%s v = { NAN, NAN };' % base)
        lines.append('return v;')
        what = 'NaN + NaN i'
    elif base in INTEGER:
        lines.append('return 0;')
        what = '0'
    elif base == 'char*':
        lines.append('return "not implemented by the emulator";')
        what = 'a message'
    elif base.endswith('*'):
        lines.append('return NULL;')
        what = 'NULL'
    elif base.startswith('struct '):
        decls.append('%s v = { 0 };' % base)
        lines.append('return v;')
        what = 'zeros'
    else:
        raise SystemExit('emu_stubs.py: no safe value for the return type '
                         '"%s"' % ret)
    said = '; '.join(x for x in ('returns ' + what if what else '', error)
                     if x)
    return decls, lines, said


def undeclared_return_type(lib, name, raw_headers):
    """For a name the preprocessed headers do not declare: its return type
    and why it is not known from them."""
    calls = {'return', 'else', 'case', 'sizeof', 'goto'}
    m = next((c for c in re.finditer(
        r'^[ \t]*(?:extern\s+(?:"C"\s+)?)?(?:__\w+__\s+)*'
        r'([A-Za-z_]\w*)\s+(?:[A-Z_]*API\s+)?%s\s*\(' % name,
        raw_headers, re.M) if c.group(1) not in calls), None)
    if m and m.group(1) not in lib['status_types']:
        raise SystemExit('emu_stubs.py: %s, declared only outside C or under '
                         'a macro\'s other name, returns %s'
                         % (name, m.group(1)))
    if m:
        return m.group(1), ('declared only for C++ or under another name '
                            '(a macro renames it)')
    return lib['status'], ('not declared in the headers: the status type is '
                           'assumed')


def emit(lib, functions, others, declared, legacy_names, raw_headers, out):
    w = out.write
    w('/* Weak stubs for every function %s exports, generated by\n'
      ' * scripts/emu_stubs.py from the real library\'s dynamic symbols '
      'and the\n * vendor headers: do not edit. A strong definition '
      'elsewhere in the\n * emulator replaces a stub at link time. */\n'
      % lib['soname'])
    w('#include <math.h>\n#include <stddef.h>\n#include <stdio.h>\n\n')
    for inc in lib['includes']:
        w('#include %s\n' % inc)
    w('\n/* Only functions are stubbed. The library\'s version node (an '
      'absolute\n * symbol) comes from the version script')
    if others:
        w('; these other\n * definitions, not functions, are left out: a '
          'stub cannot stand in for\n * data whose size and contents it '
          'does not know:\n')
        for kind, name in others:
            w(' *   %s %s\n' % (kind, name))
        w(' */\n')
    else:
        w('; the library\n * exports no data. */\n')
    w('\n/* One line on stderr, the first time a stub is called. */\n'
      'static void\nstub_say(int *said, const char *line)\n{\n'
      '    if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))\n'
      '        fputs(line, stderr);\n}\n\n')
    w('static int said[%d];\n' % len(functions))
    if lib.get('stub_test'):
        w('\n/* Whether fn is one of these stubs (the stubs have a section '
          'of their\n * own): cuGetProcAddress finds only what the emulator '
          'implements. */\n'
          'extern const char __start_emu_stubs[] '
          '__attribute__((visibility("hidden")));\n'
          'extern const char __stop_emu_stubs[] '
          '__attribute__((visibility("hidden")));\n'
          'int %s(const void *fn) __attribute__((visibility("hidden")));\n\n'
          'int\n%s(const void *fn)\n{\n'
          '    const char *p = fn;\n\n'
          '    return p >= __start_emu_stubs && p < __stop_emu_stubs;\n}\n'
          % (lib['stub_test'], lib['stub_test']))
    for i, name in enumerate(functions):
        ret, note = declared.get(name), ''
        if ret is None:
            ret, why = undeclared_return_type(lib, name, raw_headers)
            note = '/* %s */\n' % why
        decls, lines, said_what = stub_body(lib, ret, name in legacy_names)
        message = ('ampshim-emu: %s is not implemented by the emulator '
                   '(%s)\n' % (name, said_what))
        stub = 'emu_stub_' + name
        w('\n%s__attribute__((weak)) %s %s(void) __asm__("%s");\n'
          % (note, ret, stub, name))
        w('__attribute__((weak, section("emu_stubs"))) %s\n%s(void)\n{\n'
          % (ret, stub))
        for line in decls:
            w('    %s\n\n' % line)
        w('    stub_say(&said[%d], %s);\n' % (i, c_string(message)))
        for line in lines:
            w('    %s\n' % line)
        w('}\n')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('library', choices=sorted(LIBRARIES))
    parser.add_argument('--cuda-root', required=True)
    parser.add_argument('--nm', default='nm')
    parser.add_argument('--output', required=True)
    parser.add_argument('cc', nargs='+')
    args = parser.parse_args()
    lib = LIBRARIES[args.library]

    path = '%s/%s' % (args.cuda_root,
                      lib.get('path', 'lib64/' + lib['soname']))
    include_dir = args.cuda_root + '/include'
    functions, others = exported_functions(args.nm, path)
    wanted = set(functions)
    declared, raw_headers = {}, ''
    headers = lib['headers'] + ([lib['legacy_header']]
                                if lib['legacy_header'] else [])
    for header in headers:
        with open('%s/%s' % (include_dir, header)) as f:
            raw_headers += f.read()
    for header in lib['headers']:
        declared.update(declared_return_types(
            preprocess(args.cc, include_dir, header), wanted))
    legacy_names = set()
    if lib['legacy_header']:
        legacy = declared_return_types(
            preprocess(args.cc, include_dir, lib['legacy_header']), wanted)
        legacy_names = set(legacy) - set(declared)
        declared.update(legacy)
    others = [o for o in others if o[1] != lib['soname']]
    with open(args.output, 'w') as out:
        emit(lib, functions, others, declared, legacy_names, raw_headers,
             out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
