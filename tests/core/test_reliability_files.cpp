// Issue 13, files: readers accept only regular files below the size cap (a FIFO must not
// hang, /dev/zero must not be read forever), writers replace only regular files, write
// through symlinks, and leave the previous file intact when a write fails.
#include "ClusterIO.h"
#include "FileGuard.h"
#include "JsonUtil.h"
#include "ModelIO.h"
#include "PlanIO.h"

#include "CoreTestSupport.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace nest;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string &file)
{
    std::ifstream in(file, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void spit(const std::string &file, const std::string &text)
{
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
}

const char *kCluster = R"({"format": "compact", "device": "a100-80gb",
  "levels": [{"name": "node", "fanout": 8, "bandwidth_GBps": 300}]})";

} // namespace

TEST(ReliabilityFiles, fifoIsRefusedWithoutBlocking)
{
    const coretest::TempDir dir;
    const std::string fifo = dir.filePath("cluster.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    // No writer ever opens the FIFO: a reader that opened it would block forever.
    const Result<Topology> t = loadCluster(fifo);
    ASSERT_TRUE(!t.ok());
    ASSERT_TRUE(t.error().find(fifo + ": not a regular file") == 0) << t.error();
    ASSERT_TRUE(t.error().find("FIFO") != std::string::npos) << t.error();
    ASSERT_TRUE(!loadModelFile(fifo).ok());
}

TEST(ReliabilityFiles, deviceNodesAreRefused)
{
    int checked = 0;
    for (const std::string file : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
        SCOPED_TRACE(file);
        if (!fs::exists(file))
            continue;  // no such device node here (the Qt version skipped the row)
        ++checked;
        [&] {
            const Result<Json> j = readJsonFile(file);
            ASSERT_TRUE(!j.ok());
            ASSERT_EQ(j.error(), file + ": not a regular file (a character device cannot be read as a document)");
            ASSERT_TRUE(!loadModelFile(file).ok());
            ASSERT_TRUE(!loadPlan(file).ok());
        }();
    }
    if (checked == 0)
        GTEST_SKIP() << "no such device node here";
}

TEST(ReliabilityFiles, directoryIsRefused)
{
    const coretest::TempDir dir;
    const Result<Json> j = readJsonFile(dir.path());
    ASSERT_TRUE(!j.ok());
    ASSERT_EQ(j.error(), dir.path() + ": is a directory, not a file");
}

TEST(ReliabilityFiles, oversizeFileIsRefusedBeforeReading)
{
    const coretest::TempDir dir;
    const std::string big = dir.filePath("big.json");
    spit(big, "{}");
    fs::resize_file(big, limits::maxFileBytes + 1);  // sparse: no disk used
    const Result<std::string> text = readFileText(big);
    ASSERT_TRUE(!text.ok());
    ASSERT_TRUE(text.error().find("is 268435457 bytes, above the limit of 256 MB") != std::string::npos)
        << text.error();
    // Exactly at the cap is still read (the limit is inclusive); a small cap refuses.
    const Result<std::string> small = readFileText(big, 1000);
    ASSERT_TRUE(!small.ok());
    spit(big, "{\"a\": 1}");
    ASSERT_TRUE(readFileText(big, 8).ok());
    ASSERT_TRUE(!readFileText(big, 7).ok());
}

TEST(ReliabilityFiles, symlinkIsWrittenThrough)
{
    const coretest::TempDir dir;
    const std::string target = dir.filePath("real.json");
    const std::string link = dir.filePath("link.json");
    spit(target, "old");
    fs::create_symlink("real.json", link);  // relative, as users make them
    const Result<bool> w = writeJsonFile(link, Json{{"answer", 42}});
    ASSERT_TRUE(w.ok()) << w.error();
    ASSERT_TRUE(fs::is_symlink(fs::symlink_status(link)));
    ASSERT_EQ(Json::parse(slurp(target)).at("answer").get<int>(), 42);
    // A chain of links and a dangling link (creates its target).
    const std::string link2 = dir.filePath("link2.json");
    fs::create_symlink(link, link2);
    ASSERT_TRUE(writeFileAtomically(link2, "chain").ok());
    ASSERT_EQ(slurp(target), std::string("chain"));
    ASSERT_TRUE(fs::is_symlink(fs::symlink_status(link2)));
    const std::string dangling = dir.filePath("dangling.json");
    fs::create_symlink("created.json", dangling);
    ASSERT_TRUE(writeFileAtomically(dangling, "new").ok());
    ASSERT_TRUE(fs::is_symlink(fs::symlink_status(dangling)));
    ASSERT_EQ(slurp(dir.filePath("created.json")), std::string("new"));
    ASSERT_EQ(resolveWriteTarget(link2).value(), target);
}

TEST(ReliabilityFiles, nonRegularTargetsAreNotReplaced)
{
    const coretest::TempDir dir;
    const std::string fifo = dir.filePath("out.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const Result<bool> w = writeFileAtomically(fifo, "x");
    ASSERT_TRUE(!w.ok());
    ASSERT_EQ(w.error(), fifo + ": not a regular file (refusing to replace a FIFO)");
    struct stat st {};
    ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
    ASSERT_TRUE(S_ISFIFO(st.st_mode));
    // A symlink to a directory is refused too (the directory is not replaced).
    const std::string sub = dir.filePath("sub");
    fs::create_directory(sub);
    const std::string link = dir.filePath("dirlink");
    fs::create_symlink(sub, link);
    const Result<bool> d = writeFileAtomically(link, "x");
    ASSERT_TRUE(!d.ok());
    ASSERT_TRUE(d.error().find("refusing to replace a directory") != std::string::npos) << d.error();
    ASSERT_TRUE(fs::is_directory(sub));
    // A device node: never replaced (checked up front, whatever the permissions).
    const Result<std::string> null = resolveWriteTarget("/dev/null");
    ASSERT_TRUE(!null.ok());
    ASSERT_TRUE(null.error().find("character device") != std::string::npos) << null.error();
}

TEST(ReliabilityFiles, failedWriteKeepsThePreviousFile)
{
    const coretest::TempDir dir;
    const std::string file = dir.filePath("plan.json");
    spit(file, "previous contents");
    ::chmod(file.c_str(), 0640);
    // A file-size limit makes write() fail with EFBIG (as a full disk fails it).
    struct rlimit old {};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 1000;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    const Result<bool> w = writeFileAtomically(file, std::string(5000, 'x'));
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, oldHandler);
    ASSERT_TRUE(!w.ok());
    ASSERT_TRUE(w.error().find(file + ": write failed (File too large); the previous file is unchanged") == 0)
        << w.error();
    ASSERT_EQ(slurp(file), std::string("previous contents"));
    // No temporary file is left behind.
    int entries = 0;
    for (const auto &e : fs::directory_iterator(dir.path())) {
        (void)e;
        ++entries;
    }
    ASSERT_EQ(entries, 1);
    // A successful write keeps the permission bits.
    ASSERT_TRUE(writeFileAtomically(file, "new").ok());
    ASSERT_EQ(fs::status(file).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(ReliabilityFiles, missingFolderSaysWhy)
{
    const Result<bool> w = writeFileAtomically("/nonexistent-dir-xyz/plan.json", "x");
    ASSERT_TRUE(!w.ok());
    ASSERT_TRUE(w.error().find("/nonexistent-dir-xyz/plan.json: cannot be written (No such file or directory)") == 0)
        << w.error();
}

TEST(ReliabilityFiles, regularFilesStillLoad)
{
    const coretest::TempDir dir;
    const std::string file = dir.filePath("c.json");
    spit(file, kCluster);
    const Result<Topology> t = loadCluster(file);
    ASSERT_TRUE(t.ok()) << t.error();
    ASSERT_EQ(t->deviceCount(), 8);
}
