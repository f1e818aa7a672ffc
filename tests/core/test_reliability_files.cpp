// Issue 13, files: readers accept only regular files below the size cap (a FIFO must not
// hang, /dev/zero must not be read forever), writers replace only regular files, write
// through symlinks, and leave the previous file intact when a write fails.
#include "ClusterIO.h"
#include "FileGuard.h"
#include "JsonUtil.h"
#include "ModelIO.h"
#include "PlanIO.h"

#include <QTemporaryDir>
#include <QtTest>

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

class TestReliabilityFiles : public QObject {
    Q_OBJECT
private slots:
    void fifoIsRefusedWithoutBlocking()
    {
        QTemporaryDir dir;
        const std::string fifo = dir.filePath("cluster.json").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        // No writer ever opens the FIFO: a reader that opened it would block forever.
        const Result<Topology> t = loadCluster(fifo);
        QVERIFY(!t.ok());
        QVERIFY2(t.error().find(fifo + ": not a regular file") == 0, t.error().c_str());
        QVERIFY2(t.error().find("FIFO") != std::string::npos, t.error().c_str());
        QVERIFY(!loadModelFile(fifo).ok());
    }

    void deviceNodesAreRefused_data()
    {
        QTest::addColumn<QString>("file");
        QTest::newRow("/dev/zero") << "/dev/zero";
        QTest::newRow("/dev/urandom") << "/dev/urandom";
        QTest::newRow("/dev/null") << "/dev/null";
    }
    void deviceNodesAreRefused()
    {
        QFETCH(QString, file);
        if (!fs::exists(file.toStdString()))
            QSKIP("no such device node here");
        const Result<Json> j = readJsonFile(file.toStdString());
        QVERIFY(!j.ok());
        QCOMPARE(QString::fromStdString(j.error()), file + ": not a regular file (a character device cannot be read as a document)");
        QVERIFY(!loadModelFile(file.toStdString()).ok());
        QVERIFY(!loadPlan(file.toStdString()).ok());
    }

    void directoryIsRefused()
    {
        QTemporaryDir dir;
        const Result<Json> j = readJsonFile(dir.path().toStdString());
        QVERIFY(!j.ok());
        QCOMPARE(QString::fromStdString(j.error()), dir.path() + ": is a directory, not a file");
    }

    void oversizeFileIsRefusedBeforeReading()
    {
        QTemporaryDir dir;
        const std::string big = dir.filePath("big.json").toStdString();
        spit(big, "{}");
        fs::resize_file(big, limits::maxFileBytes + 1);  // sparse: no disk used
        const Result<std::string> text = readFileText(big);
        QVERIFY(!text.ok());
        QVERIFY2(text.error().find("is 268435457 bytes, above the limit of 256 MB") != std::string::npos,
                 text.error().c_str());
        // Exactly at the cap is still read (the limit is inclusive); a small cap refuses.
        const Result<std::string> small = readFileText(big, 1000);
        QVERIFY(!small.ok());
        spit(big, "{\"a\": 1}");
        QVERIFY(readFileText(big, 8).ok());
        QVERIFY(!readFileText(big, 7).ok());
    }

    void symlinkIsWrittenThrough()
    {
        QTemporaryDir dir;
        const std::string target = dir.filePath("real.json").toStdString();
        const std::string link = dir.filePath("link.json").toStdString();
        spit(target, "old");
        fs::create_symlink("real.json", link);  // relative, as users make them
        const Result<bool> w = writeJsonFile(link, Json{{"answer", 42}});
        QVERIFY2(w.ok(), w.error().c_str());
        QVERIFY(fs::is_symlink(fs::symlink_status(link)));
        QCOMPARE(Json::parse(slurp(target)).at("answer").get<int>(), 42);
        // A chain of links and a dangling link (creates its target).
        const std::string link2 = dir.filePath("link2.json").toStdString();
        fs::create_symlink(link, link2);
        QVERIFY(writeFileAtomically(link2, "chain").ok());
        QCOMPARE(slurp(target), std::string("chain"));
        QVERIFY(fs::is_symlink(fs::symlink_status(link2)));
        const std::string dangling = dir.filePath("dangling.json").toStdString();
        fs::create_symlink("created.json", dangling);
        QVERIFY(writeFileAtomically(dangling, "new").ok());
        QVERIFY(fs::is_symlink(fs::symlink_status(dangling)));
        QCOMPARE(slurp(dir.filePath("created.json").toStdString()), std::string("new"));
        QCOMPARE(resolveWriteTarget(link2).value(), target);
    }

    void nonRegularTargetsAreNotReplaced()
    {
        QTemporaryDir dir;
        const std::string fifo = dir.filePath("out.json").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const Result<bool> w = writeFileAtomically(fifo, "x");
        QVERIFY(!w.ok());
        QCOMPARE(QString::fromStdString(w.error()),
                 QString::fromStdString(fifo) + ": not a regular file (refusing to replace a FIFO)");
        struct stat st {};
        QCOMPARE(::lstat(fifo.c_str(), &st), 0);
        QVERIFY(S_ISFIFO(st.st_mode));
        // A symlink to a directory is refused too (the directory is not replaced).
        const std::string sub = dir.filePath("sub").toStdString();
        fs::create_directory(sub);
        const std::string link = dir.filePath("dirlink").toStdString();
        fs::create_symlink(sub, link);
        const Result<bool> d = writeFileAtomically(link, "x");
        QVERIFY(!d.ok());
        QVERIFY2(d.error().find("refusing to replace a directory") != std::string::npos, d.error().c_str());
        QVERIFY(fs::is_directory(sub));
        // A device node: never replaced (checked up front, whatever the permissions).
        const Result<std::string> null = resolveWriteTarget("/dev/null");
        QVERIFY(!null.ok());
        QVERIFY2(null.error().find("character device") != std::string::npos, null.error().c_str());
    }

    void failedWriteKeepsThePreviousFile()
    {
        QTemporaryDir dir;
        const std::string file = dir.filePath("plan.json").toStdString();
        spit(file, "previous contents");
        ::chmod(file.c_str(), 0640);
        // A file-size limit makes write() fail with EFBIG (as a full disk fails it).
        struct rlimit old {};
        QCOMPARE(::getrlimit(RLIMIT_FSIZE, &old), 0);
        const auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
        struct rlimit small = old;
        small.rlim_cur = 1000;
        QCOMPARE(::setrlimit(RLIMIT_FSIZE, &small), 0);
        const Result<bool> w = writeFileAtomically(file, std::string(5000, 'x'));
        ::setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, oldHandler);
        QVERIFY(!w.ok());
        QVERIFY2(w.error().find(file + ": write failed (File too large); the previous file is unchanged") == 0,
                 w.error().c_str());
        QCOMPARE(slurp(file), std::string("previous contents"));
        // No temporary file is left behind.
        int entries = 0;
        for (const auto &e : fs::directory_iterator(dir.path().toStdString())) {
            (void)e;
            ++entries;
        }
        QCOMPARE(entries, 1);
        // A successful write keeps the permission bits.
        QVERIFY(writeFileAtomically(file, "new").ok());
        QCOMPARE(fs::status(file).permissions() & fs::perms::all,
                 fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    }

    void missingFolderSaysWhy()
    {
        const Result<bool> w = writeFileAtomically("/nonexistent-dir-xyz/plan.json", "x");
        QVERIFY(!w.ok());
        QVERIFY2(w.error().find("/nonexistent-dir-xyz/plan.json: cannot be written (No such file or directory)") == 0,
                 w.error().c_str());
    }

    void regularFilesStillLoad()
    {
        QTemporaryDir dir;
        const std::string file = dir.filePath("c.json").toStdString();
        spit(file, kCluster);
        const Result<Topology> t = loadCluster(file);
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 8);
    }
};

QTEST_APPLESS_MAIN(TestReliabilityFiles)
#include "test_reliability_files.moc"
