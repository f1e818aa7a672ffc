"""Keywords to nest-cli arguments, and nest-cli's answers to Python values or InputError.

Every call of the package ends here: the keywords become the CLI's flags (``microbatch=[1, 2]``
is ``--microbatch 1,2``, ``no_zero=True`` is ``--no-zero``), the command runs in-process through
``_core.run`` (nest-cli's own parser, loaders and JSON writers), and its JSON comes back. A keyword
the command does not know is refused by the command's own parser, so a flag added to the CLI is a
keyword here without any change to this package.
"""
from __future__ import annotations

import atexit
import json
import math
import numbers
import os
import re
import shutil
import tempfile
import threading
import warnings

from . import _core


class InputError(ValueError):
    """Bad input: a wrong type, an unknown keyword, a missing or malformed file, a NaN.

    ``reason`` is the message; ``file``, ``json_path`` and ``line`` say where, when the input
    was a file or a dict (``file`` is ``"<cluster dict>"`` and the like for a dict).
    """

    def __init__(self, message: str, *, keyword: str | None = None):
        super().__init__(message)
        self.message = message
        self.keyword = keyword
        self.file, self.json_path, self.line, self.reason = _locate(message)


class NestError(RuntimeError):
    """An internal failure of the planner (nest-cli's exit status 1 without a result)."""


# "FILE: at PATH: REASON", "FILE: line 3, column 5: REASON", or just "REASON".
_AT = re.compile(r"^(?P<file>[^\n]*?): at (?P<path>[^\n:]*?): (?P<reason>.*)$", re.S)
_LINE = re.compile(r"line (?P<line>\d+)")


def _locate(message: str):
    m = _AT.match(message)
    if m:
        return m.group("file"), m.group("path"), None, m.group("reason")
    line = _LINE.search(message)
    file = None
    head = message.split(": ", 1)
    if len(head) == 2 and ("/" in head[0] or head[0].endswith(".json") or head[0].startswith("<")):
        file = head[0]
    return file, None, int(line.group("line")) if line else None, message


# --- inputs given as dicts: written once to a private folder, named in messages ------------------
_tmp_lock = threading.Lock()
_tmp_dir: str | None = None
_tmp_names: dict[str, str] = {}  # file -> "<cluster dict>"
_tmp_count = 0


def _private_dir() -> str:
    global _tmp_dir
    if _tmp_dir is None:
        _tmp_dir = tempfile.mkdtemp(prefix="nest_planner_")
        atexit.register(shutil.rmtree, _tmp_dir, True)
    return _tmp_dir


def dict_file(kind: str, data, file_name: str | None = None) -> str:
    """`data` (a dict) as a JSON file the CLI can read; messages name it "<KIND dict>"."""
    global _tmp_count
    try:
        text = json.dumps(data, indent=2, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"{kind}: the dict cannot be written as JSON ({e})", keyword=kind) from None
    with _tmp_lock:
        _tmp_count += 1
        folder = os.path.join(_private_dir(), f"{kind}-{_tmp_count}")
        os.mkdir(folder)
        path = os.path.join(folder, file_name or f"{kind}.json")
        _tmp_names[path] = f"<{kind} dict>"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _clean(message: str) -> str:
    for path, name in list(_tmp_names.items()):
        message = message.replace(path, name)
    return message


# --- keywords -> arguments -----------------------------------------------------------------------
def _scalar(keyword: str, value) -> str:
    if isinstance(value, bool):
        raise InputError(f"{keyword}: expected a number or a word, got a bool ({value})", keyword=keyword)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if not math.isfinite(v):
            raise InputError(f"{keyword}: must be a finite number, got {v}", keyword=keyword)
        return repr(v)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        if "\0" in value:
            raise InputError(f"{keyword}: the text contains a NUL character", keyword=keyword)
        return value
    arg = getattr(value, "_cli_arg", None)
    if arg is not None:
        return arg()
    raise InputError(f"{keyword}: expected a number, a word or a list of them, got {type(value).__name__}",
                     keyword=keyword)


def option_args(options: dict) -> list[str]:
    """The CLI arguments for keyword `options` (None and False leave an option out)."""
    args: list[str] = []
    for keyword, value in options.items():
        if not isinstance(keyword, str) or not keyword:
            raise InputError(f"bad keyword {keyword!r}")
        flag = "--" + keyword.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
            continue
        if isinstance(value, (list, tuple, range, set, frozenset)):
            items = sorted(value) if isinstance(value, (set, frozenset)) else list(value)
            if not items:
                raise InputError(f"{keyword}: the list is empty", keyword=keyword)
            text = ",".join(_scalar(keyword, v) for v in items)
        else:
            text = _scalar(keyword, value)
        args.append(f"{flag}={text}" if text.startswith("-") else flag)
        if not text.startswith("-"):
            args.append(text)
    return args


_UNKNOWN = re.compile(r"unknown option --([A-Za-z0-9-]+)")


def run(command: str, args: list[str], progress=None, *, expect_json=True):
    """Runs nest-cli COMMAND ARGS in-process: (parsed JSON or text, raw text, warnings)."""
    if progress is not None and not callable(progress):
        raise InputError("progress: expected a callable progress(fraction, best_s)", keyword="progress")
    rc, out, err = _core.run(command, args, progress)
    out = out.decode("utf-8", "replace")
    err = _clean(err.decode("utf-8", "replace")).strip()
    prefix = f"nest-cli {command}: "
    lines = [line[len(prefix):] if line.startswith(prefix) else line for line in err.splitlines()]
    message = "\n".join(lines)
    if rc == 2:
        m = _UNKNOWN.search(message)
        if m:
            keyword = m.group(1).replace("-", "_")
            raise InputError(f"unknown keyword '{keyword}': nest-cli {command} has no option --{m.group(1)} "
                             f"(see `nest-cli {command} --help`)", keyword=keyword)
        raise InputError(message or f"nest-cli {command} refused the input")
    if rc != 0 and not out.strip():
        raise NestError(message or f"nest-cli {command} failed (exit status {rc})")
    for line in lines:
        if line:
            warnings.warn(line, stacklevel=3)
    if not expect_json:
        return out, out, lines
    try:
        return json.loads(out), out, lines
    except json.JSONDecodeError as e:
        raise NestError(f"nest-cli {command} printed no JSON ({e})") from None
