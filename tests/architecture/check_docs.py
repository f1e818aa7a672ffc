#!/usr/bin/env python3
"""Every source folder is named in docs/architecture.md (CTest architecture_docs, issue 52).

A source folder is any directory under core/, ui/, app/ or python/ (at any depth, the four
themselves included) that directly holds a .h, .cpp or .py file. The tree is read as it is on
disk, so a folder added or moved is checked without editing this script. A folder counts as
named when its path from the repository root appears in the document as a path of its own:
`core/support/`, `app/cli`, python/nest_planner, but not as the start of a longer name
(`app/cli_main.cpp` does not name a folder app/cli) nor as the end of another path
(tests/core/ does not name core/).

Usage: check_docs.py REPO_ROOT [DOC]   (DOC defaults to REPO_ROOT/docs/architecture.md)
Exit 0 when every folder is named, 1 with the list of those that are not, 2 on bad usage.
"""
import os
import re
import sys

ROOTS = ("core", "ui", "app", "python")
SOURCE_SUFFIXES = (".h", ".cpp", ".py")


def source_folders(repo):
    """Relative paths (with '/') of the folders under ROOTS that directly hold sources."""
    found = []
    for top in ROOTS:
        base = os.path.join(repo, top)
        if not os.path.isdir(base):
            continue
        for here, dirs, files in os.walk(base):
            # Hidden folders and Python's byte-code caches are not sources.
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            if any(f.endswith(SOURCE_SUFFIXES) for f in files):
                found.append(os.path.relpath(here, repo).replace(os.sep, "/"))
    return sorted(found)


def names_folder(text, folder):
    """Whether `folder` appears in `text` as a path of its own."""
    # Not preceded by a path character (so tests/core/ is not core/), and followed by a '/'
    # or by a character that cannot continue a file or folder name.
    pattern = r"(?<![\w./-])" + re.escape(folder) + r"(?:/|(?![\w.-]))"
    return re.search(pattern, text) is not None


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    repo = argv[1]
    doc = argv[2] if len(argv) == 3 else os.path.join(repo, "docs", "architecture.md")
    try:
        with open(doc, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"{doc}: cannot read: {e.strerror}", file=sys.stderr)
        return 1
    folders = source_folders(repo)
    if not folders:
        print(f"{repo}: no source folder under {', '.join(ROOTS)}: wrong root?", file=sys.stderr)
        return 2
    missing = [d for d in folders if not names_folder(text, d)]
    if missing:
        print(f"{doc}: {len(missing)} of {len(folders)} source folders are not named "
              f"(add each to the table under \"Map\"):", file=sys.stderr)
        for d in missing:
            print(f"  {d}/", file=sys.stderr)
        return 1
    print(f"{doc}: all {len(folders)} source folders are named")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
