#!/usr/bin/env python3
"""File-local names are unique within each library (docs/reliability.md, the unity builds).

The sanitizer builds compile each static library as unity batches (NEST_UNITY): several .cpp
files become one translation unit, so two files' anonymous namespaces merge. Two helpers of the
same name then either fail to compile (same parameters) or, worse, compile and let one file
call the other's overload (different parameters). This check lists every name declared at the
top level of an anonymous namespace (or `static` at file scope) in more than one source of a
library, and fails if there is one.

    check_unity_names.py ROOT
"""
import collections
import pathlib
import re
import sys

DECL = re.compile(r'^(?:static\s+)?(?:inline\s+)?(?:constexpr\s+)?(?:const\s+)?[\w:<>,\s\*&]+?\b(\w+)\s*(?:\(|\[|=|\{)')
TYPE = re.compile(r'^(?:struct|class|enum(?:\s+class)?|using)\s+(\w+)')


def file_local_names(text):
    """The names a source declares at the top level of an anonymous namespace, or static."""
    names = set()
    anonymous = False
    for line in text.splitlines():
        if re.match(r'^namespace\s*\{', line):
            anonymous = True
            continue
        if anonymous and re.match(r'^\}\s*//\s*namespace\s*$', line):
            anonymous = False
            continue
        if not line or line[0] in ' \t#/}':
            continue
        if anonymous:
            m = TYPE.match(line) or DECL.match(line)
        else:
            m = DECL.match(line) if line.startswith('static ') else None
        if m:
            names.add(m.group(1))
    return names


def shared_names(sources):
    """{name: [files]} for names that more than one of `sources` ({file: text}) declare."""
    where = collections.defaultdict(list)
    for path, text in sorted(sources.items()):
        for name in file_local_names(text):
            where[name].append(path)
    return {n: fs for n, fs in where.items() if len(fs) > 1}


def self_test():
    a = 'namespace nest {\nnamespace {\nstd::string lower(std::string s)\n{\n}\n} // namespace\n}\n'
    b = 'namespace {\nconstexpr double kInf = 1;\nint lower(int x) { return x; }\n} // namespace\n'
    c = 'static int lower(char c);\nnamespace nest {\nint lower2();\n} // namespace nest\n'
    found = shared_names({'a.cpp': a, 'b.cpp': b, 'c.cpp': c})
    assert found == {'lower': ['a.cpp', 'b.cpp', 'c.cpp']}, found


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    self_test()
    root = pathlib.Path(sys.argv[1])
    libraries = {
        'core': sorted(root.glob('core/*/*.cpp')),
        'ui': sorted(root.glob('ui/*/*.cpp')),
        'cli': sorted(p for p in root.glob('app/cli/*.cpp')
                      if p.name not in ('cli_main.cpp', 'cli_reproduce.cpp', 'ReproduceFigures.cpp')),
    }
    bad = 0
    for lib, files in libraries.items():
        sources = {str(p.relative_to(root)): p.read_text(encoding='utf-8') for p in files}
        for name, fs in sorted(shared_names(sources).items()):
            print(f'{lib}: file-local name {name!r} is declared in {len(fs)} sources: {", ".join(fs)}')
            bad += 1
        print(f'{lib}: {len(files)} sources checked')
    if bad:
        print(f'{bad} shared file-local names: rename them, or define the shared thing once in a header')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
