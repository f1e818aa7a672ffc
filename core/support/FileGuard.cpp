#include "FileGuard.h"

#include "JsonUtil.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nest {

namespace {

std::string fail(const std::string &file, const std::string &reason)
{
    return formatError(file, "", reason);
}

std::string errnoText(int error)
{
    return std::strerror(error);
}

const char *kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

std::string megabytes(std::uintmax_t bytes)
{
    return std::to_string(bytes / (1024 * 1024)) + " MB";
}

// Closes a descriptor on every path out.
class Fd {
public:
    explicit Fd(int fd) : m_fd(fd) {}
    ~Fd()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    int get() const { return m_fd; }
    int release()
    {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }

private:
    int m_fd;
};

} // namespace

Result<std::string> readFileText(const std::string &file, std::uintmax_t maxBytes)
{
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
        const int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return Result<std::string>::failure(fail(file, "no such file"));
        return Result<std::string>::failure(fail(file, "cannot be read (" + errnoText(e) + ")"));
    }
    if (S_ISDIR(st.st_mode))
        return Result<std::string>::failure(fail(file, "is a directory, not a file"));
    if (!S_ISREG(st.st_mode))
        return Result<std::string>::failure(
            fail(file, std::string("not a regular file (") + kindOf(st.st_mode) + " cannot be read as a document)"));
    // O_NONBLOCK: should the path have become a FIFO since stat(), open() must not wait.
    const Fd fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (fd.get() < 0) {
        const int e = errno;
        return Result<std::string>::failure(
            fail(file, "cannot be opened for reading (" + errnoText(e) + ")"));
    }
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return Result<std::string>::failure(
            fail(file, std::string("not a regular file (") + kindOf(st.st_mode) + " cannot be read as a document)"));
    const auto size = static_cast<std::uintmax_t>(st.st_size);
    if (size > maxBytes)
        return Result<std::string>::failure(fail(
            file, "is " + std::to_string(size) + " bytes, above the limit of " + megabytes(maxBytes) + " per file"));
    std::string text;
    text.reserve(static_cast<size_t>(size));
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int e = errno;
            return Result<std::string>::failure(fail(file, "read error (" + errnoText(e) + ")"));
        }
        if (n == 0)
            break;
        text.append(buf, static_cast<size_t>(n));
        if (text.size() > maxBytes)  // a file that grows while we read (or lies about its size)
            return Result<std::string>::failure(
                fail(file, "is larger than the limit of " + megabytes(maxBytes) + " per file"));
    }
    return text;
}

Result<std::string> resolveWriteTarget(const std::string &file)
{
    namespace fs = std::filesystem;
    if (file.empty())
        return Result<std::string>::failure("an empty file name cannot be written");
    fs::path target = file;
    for (int depth = 0;; ++depth) {
        if (depth > 40)
            return Result<std::string>::failure(fail(file, "too many levels of symbolic links"));
        struct stat st {};
        if (::lstat(target.c_str(), &st) != 0) {
            const int e = errno;
            if (e == ENOENT)
                return target.string();  // a new file (or the target of a dangling link)
            return Result<std::string>::failure(fail(file, "cannot be written (" + errnoText(e) + ")"));
        }
        if (S_ISLNK(st.st_mode)) {
            std::error_code ec;
            const fs::path link = fs::read_symlink(target, ec);
            if (ec)
                return Result<std::string>::failure(fail(file, "cannot read the symbolic link (" + ec.message() + ")"));
            target = link.is_absolute() ? link : target.parent_path() / link;
            continue;
        }
        if (!S_ISREG(st.st_mode))
            return Result<std::string>::failure(fail(
                file, std::string("not a regular file (refusing to replace ") + kindOf(st.st_mode) + ")"));
        return target.string();
    }
}

namespace {

// The default permission bits of a new file: 0666 & ~umask (umask read without a race-free
// call, as everywhere: set and restored at once).
mode_t umaskNow()
{
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return mask;
}

// A temporary next to `target` holding `data`, flushed, fsync'd and closed, with the replaced
// file's permission bits (a new file: 0666 & ~umask), plus the execute bits when asked.
// Returns the temporary's path, or the reason (the temporary removed).
Result<std::string> writeTemporary(const std::string &file, const std::string &target, std::string_view data,
                                   bool executable, const std::string &unchanged)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::path(target).parent_path();
    if (dir.empty())
        dir = ".";
    std::string tmpl = (dir / ("." + fs::path(target).filename().string() + ".XXXXXX")).string();
    Fd fd(::mkstemp(tmpl.data()));
    if (fd.get() < 0) {
        const int e = errno;
        return Result<std::string>::failure(fail(file, "cannot be written (" + errnoText(e) + ")" + unchanged));
    }
    const auto cleanup = [&tmpl](const std::string &message) {
        ::unlink(tmpl.c_str());
        return Result<std::string>::failure(message);
    };
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int e = errno;
            return cleanup(fail(file, "write failed (" + errnoText(e) + ")" + unchanged));
        }
        if (n == 0)
            return cleanup(fail(file, "write failed (" + errnoText(ENOSPC) + ")" + unchanged));
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
        const int e = errno;
        return cleanup(fail(file, "write failed (" + errnoText(e) + ")" + unchanged));
    }
    struct stat old {};
    const mode_t mask = umaskNow();
    mode_t mode = ::stat(target.c_str(), &old) == 0 ? (old.st_mode & 07777) : (0666 & ~mask);
    if (executable)
        mode |= 0111 & ~mask;
    (void)::fchmod(fd.get(), mode);
    if (::close(fd.release()) != 0) {
        const int e = errno;
        return cleanup(fail(file, "write failed (" + errnoText(e) + ")" + unchanged));
    }
    return tmpl;
}

} // namespace

Result<bool> writeFilesAtomically(const std::vector<FileToWrite> &files)
{
    using R = Result<bool>;
    const std::string unchanged = "; no file of the set was changed";
    struct Pending {
        std::string file, target, temporary, backup;
        bool existed = false, renamed = false;
    };
    std::vector<Pending> pending;
    const auto removeTemporaries = [&pending]() {
        for (const Pending &p : pending)
            if (!p.temporary.empty() && !p.renamed)
                ::unlink(p.temporary.c_str());
    };
    // 1. Every target resolved and checked before anything is written.
    for (const FileToWrite &f : files) {
        const Result<std::string> resolved = resolveWriteTarget(f.path);
        if (!resolved)
            return R::failure(resolved.error() + unchanged);
        for (const Pending &p : pending)
            if (p.target == *resolved)
                return R::failure(fail(f.path, "is the same file as " + p.file + unchanged));
        pending.push_back({f.path, *resolved, {}, {}, false, false});
    }
    // 2. Every temporary written.
    for (size_t i = 0; i < files.size(); ++i) {
        auto tmp = writeTemporary(files[i].path, pending[i].target, files[i].data, files[i].executable, unchanged);
        if (!tmp) {
            removeTemporaries();
            return R::failure(tmp.error());
        }
        pending[i].temporary = *tmp;
    }
    // 3. Renamed in order, each replaced file kept (a hard link) until all are in place.
    const auto rollBack = [&pending, &removeTemporaries]() {
        for (Pending &p : pending) {
            if (!p.renamed)
                continue;
            if (!p.backup.empty())
                ::rename(p.backup.c_str(), p.target.c_str());
            else if (!p.existed)
                ::unlink(p.target.c_str());
        }
        removeTemporaries();
        for (const Pending &p : pending)
            if (!p.backup.empty())
                ::unlink(p.backup.c_str());
    };
    for (Pending &p : pending) {
        struct stat st {};
        p.existed = ::lstat(p.target.c_str(), &st) == 0;
        if (p.existed) {
            const std::string backup = p.temporary + ".old";
            if (::link(p.target.c_str(), backup.c_str()) == 0)
                p.backup = backup;
        }
        if (::rename(p.temporary.c_str(), p.target.c_str()) != 0) {
            const int e = errno;
            rollBack();
            return R::failure(fail(p.file, "cannot replace the file (" + errnoText(e) + ")" + unchanged));
        }
        p.renamed = true;
    }
    for (const Pending &p : pending)
        if (!p.backup.empty())
            ::unlink(p.backup.c_str());
    return true;
}

Result<bool> writeFileAtomically(const std::string &file, std::string_view data)
{
    namespace fs = std::filesystem;
    const Result<std::string> resolved = resolveWriteTarget(file);
    if (!resolved)
        return Result<bool>::failure(resolved.error());
    const fs::path target = *resolved;
    const std::string unchanged = "; the previous file is unchanged";
    fs::path dir = target.parent_path();
    if (dir.empty())
        dir = ".";
    std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
    Fd fd(::mkstemp(tmpl.data()));
    if (fd.get() < 0) {
        const int e = errno;
        return Result<bool>::failure(fail(file, "cannot be written (" + errnoText(e) + ")" + unchanged));
    }
    const auto cleanup = [&tmpl](const std::string &message) {
        ::unlink(tmpl.c_str());
        return Result<bool>::failure(message);
    };
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int e = errno;
            return cleanup(fail(file, "write failed (" + errnoText(e) + ")" + unchanged));
        }
        if (n == 0)  // no progress and no error: never spin, never rename a short file
            return cleanup(fail(file, "write failed (" + errnoText(ENOSPC) + ")" + unchanged));
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd.get()) != 0) {
        const int e = errno;
        return cleanup(fail(file, "write failed (" + errnoText(e) + ")" + unchanged));
    }
    // Keep the replaced file's permissions; a new file gets the usual 0666 & ~umask.
    struct stat old {};
    mode_t mode = 0;
    if (::stat(target.c_str(), &old) == 0) {
        mode = old.st_mode & 07777;
    } else {
        const mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    (void)::fchmod(fd.get(), mode);
    if (::close(fd.release()) != 0) {
        const int e = errno;
        return cleanup(fail(file, "write failed (" + errnoText(e) + ")" + unchanged));
    }
    if (::rename(tmpl.c_str(), target.c_str()) != 0) {
        const int e = errno;
        return cleanup(fail(file, "cannot replace the file (" + errnoText(e) + ")" + unchanged));
    }
    return true;
}

} // namespace nest
