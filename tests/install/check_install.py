#!/usr/bin/env python3
"""The Debian package and `cmake --install` (issue 51; docs/install.md), without root and
without a container:

1. CPack builds nest-planner_VERSION_ARCH.deb from the build tree (as `make package` does);
   its control data names the package, the project's version, library dependencies found by
   dpkg-shlibdeps and the Python it was built for.
2. The package is unpacked with dpkg-deb -x into a fresh folder (the files apt would install,
   under that folder instead of /), and from there: nest-cli --version, nest-cli plan on a
   preset and on the installed sample workspace, nest-planner --version, and /usr/bin/python3
   importing nest_planner from the unpacked dist-packages and planning.
3. `cmake --install` with DESTDIR installs the same files as the package holds.

Not covered here: apt resolving the dependencies on a clean Debian 12 (needs a chroot or a
container and root), maintainer scripts (there are none), the desktop menu itself.

    check_install.py --build BUILD_DIR --root SOURCE_DIR
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=kw.pop("timeout", 300), **kw)


def files_under(root):
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--root", required=True)
    a = p.parse_args()
    build = os.path.abspath(a.build)
    version = re.search(r"project\(NestPlanner VERSION ([0-9.]+)", open(os.path.join(a.root, "CMakeLists.txt")).read()).group(1)
    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    gui = "NEST_BUILD_GUI:BOOL=ON" in cache
    python = os.path.exists(os.path.join(build, "python", "nest_planner", "__init__.py"))

    with tempfile.TemporaryDirectory(prefix="nest-install-") as tmp:
        # 1. the package
        r = run(["cpack", "-G", "DEB", "--config", os.path.join(build, "CPackConfig.cmake"), "-B", os.path.join(tmp, "pkg"),
                 "-D", "CPACK_OUTPUT_FILE_PREFIX=" + os.path.join(tmp, "pkg")],
                timeout=600)
        if not check(r.returncode == 0, "cpack builds the .deb"):
            print(r.stdout[-3000:], r.stderr[-3000:])
            return 1
        debs = glob.glob(os.path.join(tmp, "pkg", "nest-planner_*.deb"))
        check(len(debs) == 1, f"one package nest-planner_*.deb: {[os.path.basename(d) for d in debs]}")
        deb = debs[0]
        check(os.path.basename(deb).startswith(f"nest-planner_{version}_"), f"its file name carries version {version}")
        info = run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"]).stdout
        fields = dict(line.split(": ", 1) for line in info.strip().splitlines() if ": " in line)
        check(fields.get("Package") == "nest-planner", "Package: nest-planner")
        check(fields.get("Version") == version, f"Version: {version}")
        depends = fields.get("Depends", "")
        check("libc6" in depends and "libstdc++6" in depends, f"library dependencies from dpkg-shlibdeps: {depends[:200]}")
        if gui:
            check("libqt6widgets6" in depends, "the GUI's Qt libraries are dependencies")
        if python:
            check("python3 (>= 3.11)" in depends, "the Python the module was built for is a dependency")

        # 2. unpacked, run from there
        root = os.path.join(tmp, "root")
        r = run(["dpkg-deb", "-x", deb, root])
        check(r.returncode == 0, "dpkg-deb -x unpacks it")
        usr = os.path.join(root, "usr")
        expected = ["bin/nest-cli", "share/man/man1/nest-cli.1.gz", "share/bash-completion/completions/nest-cli",
                    "share/nest-planner/sample_configs/workspaces/quickstart.nestws.json",
                    "share/doc/nest-planner/python.md"]
        if gui:
            expected += ["bin/nest-planner", "share/applications/nest-planner.desktop",
                         "share/icons/hicolor/scalable/apps/nest-planner.svg", "share/man/man1/nest-planner.1.gz"]
        if python:
            expected += ["lib/python3/dist-packages/nest_planner/__init__.py"]
        for f in expected:
            check(os.path.isfile(os.path.join(usr, f)), f"/usr/{f}")
        if python:
            check(len(glob.glob(os.path.join(usr, "lib/python3/dist-packages/nest_planner/_core*.so"))) == 1,
                  "/usr/lib/python3/dist-packages/nest_planner/_core*.so")
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "LANG": "C.UTF-8"}
        cli = os.path.join(usr, "bin", "nest-cli")
        r = run([cli, "--version"], env=env, cwd=tmp)
        check(r.stdout.strip() == f"nest-cli {version}", f"installed nest-cli --version: {r.stdout.strip()!r}")
        r = run([cli, "plan", "--cluster", "paper-v100-8", "--model", "llama2-7b", "--batch", "64", "--json"], env=env, cwd=tmp)
        check(r.returncode == 0 and json.loads(r.stdout)["verified"], "installed nest-cli plan (preset cluster and model)")
        ws = os.path.join(usr, "share/nest-planner/sample_configs/workspaces/quickstart.nestws.json")
        r = run([cli, "plan", "--workspace", ws, "--json"], env=env, cwd=tmp)
        check(r.returncode == 0, "installed nest-cli plan --workspace (the installed sample)")
        man = gzip_text(os.path.join(usr, "share/man/man1/nest-cli.1.gz"))
        check(".SS plan" in man and "--microbatch" in man, "the man page has each command's options")
        completion = open(os.path.join(usr, "share/bash-completion/completions/nest-cli")).read()
        check("complete" in completion and "import-cluster" in completion, "bash completion lists the commands")
        if gui:
            r = run([os.path.join(usr, "bin", "nest-planner"), "--version"], env=env, cwd=tmp)
            check(r.stdout.strip() == f"nest-planner {version}", f"installed nest-planner --version: {r.stdout.strip()!r}")
            desktop = open(os.path.join(usr, "share/applications/nest-planner.desktop")).read()
            check("Exec=nest-planner" in desktop and "Icon=nest-planner" in desktop, "the .desktop entry names the program and icon")
        if python:
            code = ("import nest_planner, os, sys; "
                    "assert nest_planner.__file__.startswith(sys.argv[1]), nest_planner.__file__; "
                    "r = nest_planner.plan('paper-v100-8', 'llama2-7b', batch=64); "
                    "print(nest_planner.__version__, r.verified)")
            penv = dict(env, PYTHONPATH=os.path.join(usr, "lib/python3/dist-packages"), PYTHONNOUSERSITE="1",
                        PYTHONDONTWRITEBYTECODE="1")
            r = run(["/usr/bin/python3", "-c", code, usr], env=penv, cwd=tmp)
            check(r.returncode == 0 and r.stdout.split() == [version, "True"],
                  f"/usr/bin/python3 imports the installed nest_planner and plans: {r.stdout.strip()} {r.stderr[-500:]}")

        # 3. cmake --install installs what the package holds
        dest = os.path.join(tmp, "destdir")
        r = run(["cmake", "--install", build, "--prefix", "/usr"], env=dict(os.environ, DESTDIR=dest))
        check(r.returncode == 0, "cmake --install with DESTDIR")
        installed, packaged = files_under(dest), files_under(root)
        check(installed == packaged, f"cmake --install and the package hold the same files "
                                     f"(only installed: {sorted(installed - packaged)[:5]}, only packaged: {sorted(packaged - installed)[:5]})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


def gzip_text(path):
    import gzip
    with gzip.open(path, "rt") as f:
        return f.read()


if __name__ == "__main__":
    sys.exit(main())
