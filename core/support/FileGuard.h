#pragma once
// Safe reads and writes of the files the tool reads and writes (cluster, model, profile,
// plan, workspace, timeline). Reads accept only regular files (a FIFO, a directory, a
// device node such as /dev/zero or /dev/urandom is refused up front: no hang, no endless
// read) no larger than limits::maxFileBytes, checked with fstat before reading. Writes
// replace only regular files, write THROUGH a symlink to its target (the link stays a
// link), go to a temporary file in the target's directory first and rename it over the
// target, so a failed write (disk full, read-only folder) leaves the previous file intact.
// Every message starts with the file name: "FILE: REASON".
#include "Limits.h"
#include "Result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nest {

// The whole content of `file`. Errors: "no such file", "is a directory, not a file",
// "not a regular file (a FIFO, device or socket cannot be read)", "is N bytes, above the
// limit of 256 MB", "cannot be opened for reading (...)", "read error (...)".
Result<std::string> readFileText(const std::string &file, std::uintmax_t maxBytes = limits::maxFileBytes);

// The path a write of `file` must replace: `file` itself, or the final target when `file`
// is a symlink (chains followed, relative targets resolved against the link's folder; a
// dangling link names the file it will create). Fails with "FILE: not a regular file
// (refusing to replace a directory/FIFO/device/socket)" when that target exists and is not
// a regular file, and on a symlink loop.
Result<std::string> resolveWriteTarget(const std::string &file);

// Writes `data` to `file` atomically: resolveWriteTarget(), a temporary file next to the
// target, flush + fsync, the old file's permission bits kept, rename over the target. On
// any failure the temporary file is removed, the previous file is untouched, and the
// message says why ("FILE: write failed: No space left on device; the previous file is
// unchanged"). The one writer for core and the CLI (`--out`).
Result<bool> writeFileAtomically(const std::string &file, std::string_view data);

// One file of a set written together.
struct FileToWrite {
    std::string path;
    std::string_view data;
    bool executable = false;   // add the execute bits (masked by the umask), as for a launch script
};

// Writes every file or none (issue 48: an export's launch script, rank map and hostfile
// belong together). First every target is resolved (as writeFileAtomically: symlinks
// followed, only regular files replaced) and every temporary written, flushed and fsync'd;
// any failure there removes the temporaries and leaves every previous file as it was ("FILE:
// write failed (No space left on device); no file of the set was changed"). Then the
// temporaries are renamed over their targets in order, each replaced file kept as a hard-link
// backup until all renames succeed; a rename that fails puts the earlier ones back. Two
// paths that resolve to the same file are refused.
Result<bool> writeFilesAtomically(const std::vector<FileToWrite> &files);

} // namespace nest
