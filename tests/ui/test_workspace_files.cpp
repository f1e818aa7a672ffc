// Files through the window: workspace and cluster save/open round trips (QSaveFile), bad
// files leave the current document untouched, recent files in the settings wrapper.
#include "WorkspaceDocument.h"
#include "MainWindow.h"
#include "SaveFile.h"
#include "Settings.h"

#include "ClusterIO.h"

#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {
const QString kCluster = uitest::kClusterSample;

void writeText(const QString &file, const QByteArray &text)
{
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}
} // namespace

class TestWorkspaceFiles : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> window(const QString &ini = QStringLiteral("s.ini"))
    {
        return std::make_unique<MainWindow>(nullptr, std::make_unique<Settings>(m_dir.filePath(ini)));
    }

private slots:
    void workspaceRoundTrip()
    {
        auto a = window();
        QString error;
        QVERIFY2(a->openFile(kQuickstart, &error), qPrintable(error));
        WorkspaceDocument *doc = a->document();
        // Edit: move a node, rename a level, change the model.
        QVERIFY(doc->moveNode(groupNamed(doc->topology(), "node6"), groupNamed(doc->topology(), "rack0")));
        QVERIFY(doc->setLevelName(2, QStringLiteral("core")));
        QVERIFY(doc->setModel(ModelSource(Json{{"preset", "gpt3-35b"}, {"seq_length", 2048}})));
        QVERIFY(doc->isModified());
        const QString file = m_dir.filePath("edited.nestws.json");
        QVERIFY2(a->saveWorkspace(file, &error), qPrintable(error));
        QVERIFY(!doc->isModified());
        QCOMPARE(doc->fileName(), QFileInfo(file).absoluteFilePath());

        auto b = window(QStringLiteral("b.ini"));
        QVERIFY2(b->openFile(file, &error), qPrintable(error));
        QVERIFY(b->document()->topology() == doc->topology());
        QCOMPARE(b->document()->model().toJson(), doc->model().toJson());
        QCOMPARE(b->document()->search(), doc->search());
        // quickstart's search settings survived (memory_headroom 0.05 in the sample).
        QCOMPARE(b->document()->search().memoryHeadroom, 0.05);
        QCOMPARE(b->document()->fileKind(), WorkspaceDocument::FileKind::Workspace);
        const Topology &t = b->document()->topology();
        QCOMPARE(t.groups[groupNamed(t, "rack0")].children.size(), size_t(4));  // 3 + node6
        QCOMPARE(t.levels[2].name, std::string("core"));
    }

    void clusterRoundTrip()
    {
        auto a = window();
        QString error;
        QVERIFY2(a->openFile(kCluster, &error), qPrintable(error));
        QCOMPARE(a->document()->fileKind(), WorkspaceDocument::FileKind::Cluster);
        QCOMPARE(a->document()->topology().deviceCount(), 16);  // paper: 16 V100, 2 per node
        // Change a node's device count, then save as a cluster file.
        const Topology &t0 = a->document()->topology();
        int node = -1;
        for (int g = 0; g < static_cast<int>(t0.groups.size()) && node < 0; ++g)
            if (t0.groups[g].level == 0)
                node = g;
        QVERIFY(a->document()->setNodeDevices(node, 4, t0.deviceTypes[0]));
        QCOMPARE(a->document()->topology().deviceCount(), 18);
        const QString file = m_dir.filePath("cluster.json");
        QVERIFY2(a->saveCluster(file, &error), qPrintable(error));
        auto loaded = loadCluster(file.toStdString());
        QVERIFY2(loaded.ok(), loaded.error().c_str());
        QVERIFY(*loaded == a->document()->topology());
        auto b = window(QStringLiteral("b.ini"));
        QVERIFY2(b->openFile(file, &error), qPrintable(error));
        QVERIFY(b->document()->topology() == a->document()->topology());
    }

    void badFilesKeepTheDocument_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("content");   // empty name = a directory
        QTest::addColumn<QString>("expected");
        QTest::newRow("missing") << "missing.json" << QByteArray() << "missing.json";
        QTest::newRow("malformed") << "bad.json" << QByteArray("{\"cluster\": ") << "bad.json";
        QTest::newRow("bad cluster in workspace") << "badws.nestws.json"
            << QByteArray(R"({"cluster": {"levels": [], "tree": {}}})") << "cluster";
        QTest::newRow("bad search") << "badsearch.nestws.json"
            << QByteArray(R"({"cluster": {"template": "fat-tree"}, "search": {"schedules": ["x"]}})")
            << "search.schedules[0]";
        QTest::newRow("directory") << "adir" << QByteArray() << "adir";
    }

    void badFilesKeepTheDocument()
    {
        QFETCH(QString, name);
        QFETCH(QByteArray, content);
        QFETCH(QString, expected);
        const QString path = m_dir.filePath(name);
        if (name == "adir")
            QDir(m_dir.path()).mkpath(name);
        else if (!content.isEmpty())
            writeText(path, content);
        auto a = window();
        QString error;
        QVERIFY(a->openFile(kQuickstart, &error));
        const Topology before = a->document()->topology();
        const QString fileBefore = a->document()->fileName();
        QVERIFY(!a->openFile(path, &error));
        QVERIFY2(error.contains(name), qPrintable(error));
        QVERIFY2(error.contains(expected), qPrintable(error));
        QVERIFY(a->document()->topology() == before);
        QCOMPARE(a->document()->fileName(), fileBefore);
    }

    void saveFailureIsReported()
    {
        auto a = window();
        QString error;
        QVERIFY(a->openFile(kQuickstart, &error));
        QVERIFY(a->document()->moveNode(groupNamed(a->document()->topology(), "node0"),
                                        groupNamed(a->document()->topology(), "rack1")));
        QVERIFY(!a->saveWorkspace(QStringLiteral("/nonexistent-dir/w.nestws.json"), &error));
        QVERIFY2(error.contains("/nonexistent-dir/w.nestws.json"), qPrintable(error));
        QVERIFY(a->document()->isModified());  // still unsaved
        // The atomic writer never leaves a half-written target behind.
        QVERIFY(!writeFileAtomically(m_dir.filePath("nodir/x"), QByteArray("x"), &error));
        QVERIFY(!QFile::exists(m_dir.filePath("nodir/x")));
    }

    void recentFiles()
    {
        Settings s(m_dir.filePath("recent.ini"));
        s.clearRecentFiles();
        QStringList made;
        for (int i = 0; i < 12; ++i) {
            const QString f = m_dir.filePath(QStringLiteral("r%1.json").arg(i));
            writeText(f, "{}");
            made << f;
            s.addRecentFile(f);
        }
        s.addRecentFile(made[11]);  // again: no duplicate
        QStringList recent = s.recentFiles();
        QCOMPARE(recent.size(), Settings::kMaxRecentFiles);
        QCOMPARE(recent.first(), QFileInfo(made[11]).absoluteFilePath());
        QCOMPARE(recent.count(QFileInfo(made[11]).absoluteFilePath()), 1);
        QVERIFY(!recent.contains(QFileInfo(made[0]).absoluteFilePath()));  // capped: oldest gone
        QFile::remove(made[10]);
        recent = s.recentFiles();
        QVERIFY(!recent.contains(QFileInfo(made[10]).absoluteFilePath()));  // missing: dropped
        QCOMPARE(recent.size(), Settings::kMaxRecentFiles - 1);
    }

    void openingAddsToRecentFiles()
    {
        auto a = window(QStringLiteral("recent2.ini"));
        QString error;
        QVERIFY(a->openFile(kQuickstart, &error));
        QCOMPARE(a->settings().recentFiles().value(0), QFileInfo(kQuickstart).absoluteFilePath());
    }

    void sampleOpensUntitled()
    {
        // With no file argument the app opens the bundled sample; Save must not be able to
        // overwrite it, so it opens without a file name and stays out of the recent files.
        auto a = window(QStringLiteral("sample.ini"));
        QString error;
        QVERIFY(a->openSample(kQuickstart, &error));
        QVERIFY(a->document()->fileName().isEmpty());
        QVERIFY(a->document()->topology().deviceCount() > 0);
        QVERIFY(a->settings().recentFiles().isEmpty());
        QVERIFY(!a->openSample(m_dir.filePath("missing.nestws.json"), &error));
        QVERIFY(error.contains("missing.nestws.json"));
    }
};

QTEST_MAIN(TestWorkspaceFiles)
#include "test_workspace_files.moc"
