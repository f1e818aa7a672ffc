#!/usr/bin/env python3
"""A man page from a program's own help (issue 51): the text of `PROGRAM --help` and, for
nest-cli, of `nest-cli COMMAND --help` for each command its usage lists, as roff.

    help2man.py --program build/app/nest-cli --name nest-cli --version 0.1.0 \
                --summary "..." --out nest-cli.1.gz

Written here because Debian's help2man is not installed by default; the page is regenerated
at every build from the executable, so it cannot drift from the options parsed.
"""
import argparse
import gzip
import re
import subprocess
import sys


def roff(text: str) -> str:
    """Preformatted text, escaped: backslashes, and lines starting with . or '."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def run(args):
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"help2man.py: {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--program", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--summary", required=True)
    p.add_argument("--subcommands", action="store_true", help="a section per command of the usage")
    p.add_argument("--out", required=True)
    a = p.parse_args()

    usage = run([a.program, "--help"])
    page = [f'.TH {a.name.upper()} 1 "" "NEST Planner {a.version}" "User Commands"',
            ".SH NAME", f"{a.name} \\- {a.summary}",
            ".SH SYNOPSIS AND OPTIONS", ".nf", roff(usage), ".fi"]
    if a.subcommands:
        commands = []
        in_list = False
        for line in usage.splitlines():
            if line.strip() == "commands:":
                in_list = True
                continue
            if in_list and not line.strip():
                break
            m = re.match(r"^  ([a-z][a-z-]*)\s", line)
            if in_list and m:
                commands.append(m.group(1))
        if not commands:
            sys.exit("help2man.py: no commands found in the usage")
        page.append(".SH COMMANDS")
        for c in commands:
            page += [f".SS {c}", ".nf", roff(run([a.program, c, "--help"])), ".fi"]
    page += [".SH VERSION", f"{a.name} {a.version}",
             ".SH SEE ALSO", "nest-cli(1), nest-planner(1); /usr/share/doc/nest-planner; "
             "the Python module nest_planner (docs/python.md)"]
    data = ("\n".join(page) + "\n").encode()
    if a.out.endswith(".gz"):
        with open(a.out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0, compresslevel=9) as g:
            g.write(data)
    else:
        open(a.out, "wb").write(data)


if __name__ == "__main__":
    main()
