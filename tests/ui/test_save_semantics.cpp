// File ▸ Save never drops work silently. A document opened from a cluster file is saved back
// as a cluster file, which holds only the cluster: when its model or search settings changed
// too, Save asks "Save Workspace As… / Save Cluster Only / Cancel" (answered here through
// MainWindow::setPrompts, no modal dialog), and whatever was not written stays modified.
#include "WorkspaceDocument.h"
#include "MainWindow.h"
#include "SavePolicy.h"
#include "Settings.h"

#include "ClusterIO.h"
#include "Workspace.h"

#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;

Q_DECLARE_METATYPE(nest::ui::WorkspaceDocument::FileKind)
Q_DECLARE_METATYPE(nest::ui::SaveAction)

using namespace uitest;

namespace {
const QString kCluster = uitest::kClusterSample;

int firstNode(const Topology &t)
{
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].level == 0)
            return g;
    return -1;
}
} // namespace

class TestSaveSemantics : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    int m_asked = 0;                 // times the cluster-or-workspace question was asked
    QString m_askedAbout;
    ClusterSaveChoice m_answer = ClusterSaveChoice::Cancel;
    QString m_suggested;             // what Save As suggested
    QString m_saveAsFile;            // what "the user" picks in Save As ("" = cancel)

    // A window on a private copy of `source` (a cluster or workspace file), prompts answered.
    std::unique_ptr<MainWindow> windowOn(const QString &source, const QString &copyName)
    {
        auto w = std::make_unique<MainWindow>(nullptr, std::make_unique<Settings>(m_dir.filePath("s.ini")));
        Prompts p;
        p.clusterOrWorkspace = [this](const QString &file) {
            ++m_asked;
            m_askedAbout = file;
            return m_answer;
        };
        p.workspaceFileName = [this](const QString &suggested) {
            m_suggested = suggested;
            return m_saveAsFile;
        };
        p.unsavedChanges = [](const QString &) { return UnsavedChoice::Save; };
        p.warning = [](const QString &title, const QString &message) {
            qWarning("unexpected warning: %s: %s", qPrintable(title), qPrintable(message));
        };
        w->setPrompts(p);
        const QString copy = m_dir.filePath(copyName);
        QFile::remove(copy);
        if (!QFile::copy(source, copy))
            qFatal("cannot copy %s", qPrintable(source));
        QString error;
        if (!w->openFile(copy, &error))
            qFatal("cannot open %s", qPrintable(error));
        m_asked = 0;
        m_askedAbout.clear();
        m_suggested.clear();
        return w;
    }

private slots:
    void decide_data()
    {
        QTest::addColumn<QString>("fileName");
        QTest::addColumn<WorkspaceDocument::FileKind>("kind");
        QTest::addColumn<bool>("settingsModified");
        QTest::addColumn<SaveAction>("expected");
        using K = WorkspaceDocument::FileKind;
        // The rule, written out: no file -> Save As; a workspace holds everything -> write it;
        // a cluster file holds only the cluster -> write it unless settings changed, then ask.
        QTest::newRow("untitled") << QString() << K::Workspace << false << SaveAction::AskWorkspaceFileName;
        QTest::newRow("untitled, settings") << QString() << K::Workspace << true << SaveAction::AskWorkspaceFileName;
        QTest::newRow("untitled cluster kind") << QString() << K::Cluster << true << SaveAction::AskWorkspaceFileName;
        QTest::newRow("workspace") << "/a/w.nestws.json" << K::Workspace << false << SaveAction::WriteWorkspace;
        QTest::newRow("workspace, settings") << "/a/w.nestws.json" << K::Workspace << true << SaveAction::WriteWorkspace;
        QTest::newRow("cluster") << "/a/c.json" << K::Cluster << false << SaveAction::WriteCluster;
        QTest::newRow("cluster, settings") << "/a/c.json" << K::Cluster << true << SaveAction::AskClusterOrWorkspace;
    }

    void decide()
    {
        QFETCH(QString, fileName);
        QFETCH(WorkspaceDocument::FileKind, kind);
        QFETCH(bool, settingsModified);
        QFETCH(SaveAction, expected);
        QCOMPARE(decideSave(fileName, kind, settingsModified), expected);
    }

    void workspaceNames()
    {
        QCOMPARE(workspaceNameFor(QStringLiteral("/d/paper.json")), QStringLiteral("/d/paper.nestws.json"));
        QCOMPARE(workspaceNameFor(QStringLiteral("/d/cluster")), QStringLiteral("/d/cluster.nestws.json"));
        QCOMPARE(workspaceNameFor(QStringLiteral("/d/w.nestws.json")), QStringLiteral("/d/w.nestws.json"));
        QCOMPARE(workspaceNameFor(QString()), QString());
    }

    void clusterOnlyChangeWritesWithoutAsking()
    {
        auto w = windowOn(kCluster, QStringLiteral("c1.json"));
        WorkspaceDocument *doc = w->document();
        QCOMPARE(doc->fileKind(), WorkspaceDocument::FileKind::Cluster);
        QVERIFY(!doc->isModified());
        QVERIFY(doc->setNodeDevices(firstNode(doc->topology()), 4, doc->topology().deviceTypes[0]));
        QVERIFY(doc->isClusterModified());
        QVERIFY(!doc->isSettingsModified());
        QVERIFY(w->save());
        QCOMPARE(m_asked, 0);
        QVERIFY(!doc->isModified());
        const auto loaded = loadCluster(m_dir.filePath("c1.json").toStdString());
        QVERIFY2(loaded.ok(), loaded.error().c_str());
        QCOMPARE(loaded->deviceCount(), 18);   // 16 + 2 added to the first node
    }

    void modelChangeOnClusterFileAsks_Cancel()
    {
        auto w = windowOn(kCluster, QStringLiteral("c2.json"));
        WorkspaceDocument *doc = w->document();
        const QByteArray before = bytesOf(m_dir.filePath("c2.json"));
        QVERIFY(doc->setNodeDevices(firstNode(doc->topology()), 4, doc->topology().deviceTypes[0]));
        QVERIFY(doc->setModel(ModelSource(Json{{"preset", "gpt3-35b"}})));
        m_answer = ClusterSaveChoice::Cancel;
        QVERIFY(!w->save());
        QCOMPARE(m_asked, 1);
        QCOMPARE(m_askedAbout, QFileInfo(m_dir.filePath("c2.json")).absoluteFilePath());
        QCOMPARE(bytesOf(m_dir.filePath("c2.json")), before);   // nothing written
        QVERIFY(doc->isClusterModified());
        QVERIFY(doc->isSettingsModified());
        // Quit -> "Save" -> the same question -> Cancel: the window must not close.
        QVERIFY(!w->maybeSave());
        QCOMPARE(m_asked, 2);
    }

    void modelChangeOnClusterFileAsks_ClusterOnly()
    {
        auto w = windowOn(kCluster, QStringLiteral("c3.json"));
        WorkspaceDocument *doc = w->document();
        QVERIFY(doc->setNodeDevices(firstNode(doc->topology()), 4, doc->topology().deviceTypes[0]));
        QVERIFY(doc->setModel(ModelSource(Json{{"preset", "gpt3-35b"}})));
        m_answer = ClusterSaveChoice::SaveClusterOnly;
        QVERIFY(w->save());
        QCOMPARE(m_asked, 1);
        const auto loaded = loadCluster(m_dir.filePath("c3.json").toStdString());
        QVERIFY2(loaded.ok(), loaded.error().c_str());
        QVERIFY(*loaded == doc->topology());
        // The cluster is on disk; the model is not, and the document says so.
        QVERIFY(!doc->isClusterModified());
        QVERIFY(doc->isSettingsModified());
        QVERIFY(doc->isModified());
        QCOMPARE(doc->fileKind(), WorkspaceDocument::FileKind::Cluster);
        QVERIFY2(w->lastStatus().contains("stay unsaved"), qPrintable(w->lastStatus()));
        // Undoing the model change leaves nothing unsaved (compared by content).
        doc->undoStack()->undo();
        QVERIFY(!doc->isModified());
    }

    void searchChangeOnClusterFileAsks_WorkspaceAs()
    {
        auto w = windowOn(kCluster, QStringLiteral("c4.json"));
        WorkspaceDocument *doc = w->document();
        const QByteArray clusterBefore = bytesOf(m_dir.filePath("c4.json"));
        SearchSettings s = doc->search();
        s.microBatches = {1, 2};
        s.memoryHeadroom = 0.1;
        QVERIFY(doc->setSearch(s));
        QVERIFY(!doc->isClusterModified());
        QVERIFY(doc->isSettingsModified());
        m_answer = ClusterSaveChoice::SaveWorkspaceAs;
        m_saveAsFile = m_dir.filePath("c4-work");   // the extension is added
        QVERIFY(w->save());
        m_saveAsFile.clear();
        QCOMPARE(m_asked, 1);
        QCOMPARE(m_suggested, QFileInfo(m_dir.filePath("c4.nestws.json")).absoluteFilePath());
        const QString written = m_dir.filePath("c4-work.nestws.json");
        QCOMPARE(doc->fileName(), QFileInfo(written).absoluteFilePath());
        QCOMPARE(doc->fileKind(), WorkspaceDocument::FileKind::Workspace);
        QVERIFY(!doc->isModified());
        QCOMPARE(bytesOf(m_dir.filePath("c4.json")), clusterBefore);   // the cluster file untouched
        const auto ws = loadWorkspace(written.toStdString());
        QVERIFY2(ws.ok(), ws.error().c_str());
        QCOMPARE(ws->search.microBatches, (std::vector<int>{1, 2}));
        QCOMPARE(ws->search.memoryHeadroom, 0.1);
        QVERIFY(ws->cluster == doc->topology());
        // Saving again writes the workspace, no question.
        QVERIFY(doc->setModel(ModelSource(Json{{"preset", "bert-large"}})));
        QVERIFY(w->save());
        QCOMPARE(m_asked, 1);
        QCOMPARE(loadWorkspace(written.toStdString())->model.toJson(), (Json{{"preset", "bert-large"}}));
    }

    void workspaceSavesEverythingWithoutAsking()
    {
        auto w = windowOn(kQuickstart, QStringLiteral("q.nestws.json"));
        WorkspaceDocument *doc = w->document();
        QVERIFY(doc->setModel(ModelSource(Json{{"preset", "gpt3-35b"}})));
        QVERIFY(w->save());
        QCOMPARE(m_asked, 0);
        QVERIFY(!doc->isModified());
        const auto ws = loadWorkspace(m_dir.filePath("q.nestws.json").toStdString());
        QVERIFY2(ws.ok(), ws.error().c_str());
        QCOMPARE(ws->model.toJson(), (Json{{"preset", "gpt3-35b"}}));
    }

    void saveClusterAsElsewhereKeepsTheDocumentModified()
    {
        auto w = windowOn(kQuickstart, QStringLiteral("q2.nestws.json"));
        WorkspaceDocument *doc = w->document();
        QVERIFY(doc->setClusterName(QStringLiteral("renamed")));
        QString error;
        QVERIFY2(w->saveCluster(m_dir.filePath("export.json"), &error), qPrintable(error));
        // Another file got a copy of the cluster; the workspace itself is still unsaved.
        QVERIFY(doc->isModified());
        QCOMPARE(doc->fileName(), QFileInfo(m_dir.filePath("q2.nestws.json")).absoluteFilePath());
    }

    void untitledSaveAsCancelled()
    {
        auto w = windowOn(kQuickstart, QStringLiteral("q3.nestws.json"));
        w->newDocument(w->document()->topology());
        QVERIFY(w->document()->isModified());
        QVERIFY(w->document()->fileName().isEmpty());
        m_saveAsFile.clear();
        QVERIFY(!w->save());
        QCOMPARE(m_asked, 0);
        // An untitled workspace is offered its cluster's name, never in a sample folder.
        QCOMPARE(QFileInfo(m_suggested).fileName(), QStringLiteral("quickstart-2-racks.nestws.json"));
        QVERIFY(!m_suggested.contains(QStringLiteral("sample_configs")));
        QVERIFY(w->document()->isModified());
        m_saveAsFile = m_dir.filePath("new.nestws.json");
        QVERIFY(w->save());
        m_saveAsFile.clear();
        QVERIFY(!w->document()->isModified());
        QVERIFY(QFile::exists(m_dir.filePath("new.nestws.json")));
    }
};

QTEST_MAIN(TestSaveSemantics)
#include "test_save_semantics.moc"
