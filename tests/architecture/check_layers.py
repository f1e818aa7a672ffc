#!/usr/bin/env python3
"""The direction of dependencies between the source folders (docs/architecture.md, "Map").

Each library's folders are layers, lowest first; a file may include headers of its own
folder and of the folders below it, never above (core never includes ui, ui never app).
A header is found by its file name: every file name is unique across core/ and ui/.
Prints each violation as FILE: includes HEADER (FOLDER above FOLDER) and exits 1 when
there is one; exits 2 when a folder or a header is not in the map.

    check_layers.py REPO_ROOT core=support;domain;... ui=support;document;...

The folder lists come from CMake (NEST_CORE_FOLDERS and NEST_UI_FOLDERS of the top-level
CMakeLists.txt, which also builds the libraries from them), so the order has one definition.
"""
import os
import re
import sys

LIBRARIES = ['core', 'ui', 'app']  # each may use those before it
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layers_from(args):
    """{'core': [folder, ...], 'ui': [...]} from arguments LIB=f1;f2;... (CMake lists)."""
    layers = {}
    for arg in args:
        lib, sep, folders = arg.partition('=')
        if not sep or lib not in LIBRARIES or not folders:
            raise SystemExit(f'check_layers.py: expected LIB=folder;folder;..., got {arg!r}')
        layers[lib] = folders.split(';')
    return layers


def sources(root, lib):
    for dirpath, _, names in os.walk(os.path.join(root, lib)):
        for n in sorted(names):
            if n.endswith(('.h', '.cpp', '.inc')):
                yield os.path.join(dirpath, n)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    root = sys.argv[1]
    layers = layers_from(sys.argv[2:])
    # header file name -> (library, folder); the headers CMake generates into the build tree
    # (core/SourceDir.h.in) count as core's lowest folder.
    where = {'SourceDir.h': ('core', layers['core'][0])} if 'core' in layers else {}
    for lib in layers:
        for path in sources(root, lib):
            rel = os.path.relpath(path, os.path.join(root, lib)).split(os.sep)
            if len(rel) != 2 or rel[0] not in layers[lib]:
                print(f'{os.path.relpath(path, root)}: not in a folder of the map {layers[lib]}')
                return 2
            if path.endswith(('.h', '.inc')):   # .inc: a generated table a .cpp includes
                where[rel[1]] = (lib, rel[0])
    problems = []
    for lib in LIBRARIES:
        for path in sources(root, lib):
            rel = os.path.relpath(path, root)
            own = where.get(os.path.basename(path)) or (lib, rel.split(os.sep)[1] if lib in layers else None)
            for header in INCLUDE.findall(open(path, encoding='utf-8', errors='replace').read()):
                name = os.path.basename(header)
                if name.endswith('.moc') or name not in where:
                    if not name.endswith('.moc') and lib != 'app':
                        print(f'{rel}: includes "{header}", which is in no folder of the map')
                        return 2
                    continue
                hlib, hfolder = where[name]
                if LIBRARIES.index(hlib) > LIBRARIES.index(lib):
                    problems.append(f'{rel}: includes {header} ({hlib}/ above {lib}/)')
                elif hlib == lib and layers[lib].index(hfolder) > layers[lib].index(own[1]):
                    problems.append(f'{rel}: includes {header} ({lib}/{hfolder} above {lib}/{own[1]})')
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f'dependencies point down: {sum(1 for lib in LIBRARIES for _ in sources(root, lib))} files checked')
    return 0


if __name__ == '__main__':
    sys.exit(main())
