// Issue 13 in the window: a search above the limits is refused at once with the estimate
// (PlanRunner's failed signal, never a frozen run); a search cancels cleanly; the GUI's
// writer (SaveFile) writes through symlinks and never replaces a FIFO or a directory.
#include "ClusterIO.h"
#include "PlanRunner.h"
#include "SaveFile.h"
#include "UiTestSupport.h"

#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

using namespace nest;
using namespace nest::ui;

namespace {

Workspace inputs(const std::string &planner, int layers, const std::string &preset = "gpt3-175b")
{
    Workspace w;
    w.cluster = *resolveCluster(uitest::kClusterSample.toStdString());
    w.model = ModelSource(Json{{"preset", preset}, {"layers", layers}});
    w.search.planner = planner;
    return w;
}

} // namespace

class TestReliabilityRunner : public QObject {
    Q_OBJECT
private slots:
    void refusalIsTheRunsError()
    {
        // Exhaustive enumeration of a 40-layer model: astronomically many plans. The
        // worker refuses before enumerating; the window gets the reason as the run's error.
        // (A Llama 2 shape, whose state the sample cluster holds: a model that fits nowhere
        // is refused earlier still, with "nothing fits in memory", issue 48.)
        PlanRunner runner;
        QSignalSpy failed(&runner, &PlanRunner::failed);
        QSignalSpy finished(&runner, &PlanRunner::finished);
        runner.plan(inputs("exhaustive", 40, "llama2-7b"), 1, "too big");
        QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 20000);
        QCOMPARE(finished.count(), 0);
        const QString message = failed.at(0).at(1).toString();
        QVERIFY2(message.startsWith("search refused: search would visit ~"), qPrintable(message));
        QVERIFY2(message.contains("above the limit of"), qPrintable(message));
        QVERIFY(!runner.isRunning());
    }

    void cancelDuringASearchIsClean()
    {
        PlanRunner runner;
        QSignalSpy cancelled(&runner, &PlanRunner::cancelled);
        QSignalSpy finished(&runner, &PlanRunner::finished);
        runner.plan(inputs("nest", 96), 1, "gpt3");
        runner.cancel();
        QCOMPARE(cancelled.count(), 1);
        runner.waitForIdle();
        QCOMPARE(finished.count(), 0);
        QVERIFY(!runner.isRunning());
    }

    void saveFileWritesThroughSymlinks()
    {
        QTemporaryDir dir;
        const QString target = dir.filePath("real.svg");
        const QString link = dir.filePath("link.svg");
        QVERIFY(QFile(link).exists() == false);
        {
            QFile f(target);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("old");
        }
        QVERIFY(QFile::link("real.svg", link));
        QString error;
        QVERIFY2(writeFileAtomically(link, QByteArray("new"), &error), qPrintable(error));
        QVERIFY(QFileInfo(link).isSymLink());
        QCOMPARE(uitest::bytesOf(target), QByteArray("new"));
    }

    void saveFileRefusesNonRegularTargets()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath("out.png");
        QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
        QString error;
        QVERIFY(!writeFileAtomically(fifo, QByteArray("x"), &error));
        QCOMPARE(error, fifo + ": not a regular file (refusing to replace a FIFO)");
        struct stat st {};
        QCOMPARE(::lstat(fifo.toLocal8Bit().constData(), &st), 0);
        QVERIFY(S_ISFIFO(st.st_mode));
        QVERIFY(!writeFileAtomically(dir.path(), QByteArray("x"), &error));
        QVERIFY2(error.contains("refusing to replace a directory"), qPrintable(error));
    }
};

QTEST_MAIN(TestReliabilityRunner)
#include "test_reliability_runner.moc"
