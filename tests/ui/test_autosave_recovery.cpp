// Autosave and recovery: the recovery file (its name, format and errors), when start-up
// offers it (newer than the document), autosave on a timer only while modified, never over
// the user's file, removal on a clean save or close, restore after a "crash" (a window
// destroyed without closing), decline, untitled documents, and a second live instance; the
// list offered at every start (also with no file, and for documents other than the one
// opened), and the offer made by File ▸ Open Recent.
// Prompts are answered through MainWindow::setPrompts (no modal dialog).
#include "Autosaver.h"
#include "WorkspaceDocument.h"
#include "MainWindow.h"
#include "Recovery.h"
#include "Settings.h"

#include <QDateTime>
#include <QMenu>
#include <QMenuBar>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

void writeText(const QString &file, const QByteArray &text)
{
    QFile f(file);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(text), text.size());
}

void setModified(const QString &file, const QDateTime &when)
{
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadWrite));
    QVERIFY(f.setFileTime(when, QFileDevice::FileModificationTime));
}

} // namespace

class TestAutosaveRecovery : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    QString m_recoveryDir;
    int m_offers = 0;
    RecoveryOffer m_lastOffer;
    RecoveryChoice m_restore = RecoveryChoice::Restore;
    int m_counter = 0;
    // The start-up list: what it offered each time, and the answers given in turn.
    QList<QList<RecoveryOffer>> m_lists;
    QList<RecoveryAnswer> m_answers;

    // A window whose settings put recovery files in m_recoveryDir, autosaving every
    // `interval` seconds; prompts answered from the members.
    std::unique_ptr<MainWindow> makeWindow(int interval = 0)
    {
        auto settings = std::make_unique<Settings>(m_dir.filePath(QStringLiteral("s%1.ini").arg(++m_counter)));
        settings->setRecoveryDirectory(m_recoveryDir);
        settings->setAutosaveIntervalSeconds(interval);
        auto w = std::make_unique<MainWindow>(nullptr, std::move(settings));
        Prompts p;
        p.restoreRecovery = [this](const RecoveryOffer &offer) {
            ++m_offers;
            m_lastOffer = offer;
            return m_restore;
        };
        p.chooseRecovery = [this](const QList<RecoveryOffer> &offers) {
            m_lists.append(offers);
            return m_answers.isEmpty() ? RecoveryAnswer{} : m_answers.takeFirst();
        };
        p.unsavedChanges = [](const QString &) { return UnsavedChoice::Discard; };
        p.warning = [](const QString &t, const QString &m) { qWarning("%s: %s", qPrintable(t), qPrintable(m)); };
        w->setPrompts(p);
        return w;
    }

    // A private copy of the quick-start workspace, opened in `w`.
    QString openCopy(MainWindow *w, const QString &name)
    {
        const QString file = m_dir.filePath(name);
        QFile::remove(file);
        if (!QFile::copy(kQuickstart, file))
            qFatal("copy failed");
        // An old file time, so that anything written now is newer.
        QFile f(file);
        f.open(QIODevice::ReadWrite);
        f.setFileTime(QDateTime::currentDateTime().addSecs(-3600), QFileDevice::FileModificationTime);
        f.close();
        QString error;
        if (!w->openFile(file, &error))
            qFatal("%s", qPrintable(error));
        return QFileInfo(file).absoluteFilePath();
    }

    void edit(WorkspaceDocument *doc)
    {
        const Topology &t = doc->topology();
        QVERIFY(doc->moveNode(groupNamed(t, "node6"), groupNamed(t, "rack0")));
    }

private slots:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);   // nothing touches the user's folders
        m_recoveryDir = m_dir.filePath(QStringLiteral("recovery"));
    }

    void init()
    {
        m_offers = 0;
        m_restore = RecoveryChoice::Restore;
        m_lists.clear();
        m_answers.clear();
        QDir(m_recoveryDir).removeRecursively();
    }

    void defaults()
    {
        Settings s(m_dir.filePath("fresh.ini"));
        QCOMPARE(s.autosaveIntervalSeconds(), 60);
        QVERIFY2(s.recoveryDirectory().startsWith(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)),
                 qPrintable(s.recoveryDirectory()));
        s.setAutosaveIntervalSeconds(5);
        QCOMPARE(Settings(m_dir.filePath("fresh.ini")).autosaveIntervalSeconds(), 5);
    }

    void recoveryFileNames()
    {
        const QString a = recoveryFileFor(QStringLiteral("/r"), QStringLiteral("/x/a.json"));
        const QString b = recoveryFileFor(QStringLiteral("/r"), QStringLiteral("/y/a.json"));
        QVERIFY(a.startsWith(QStringLiteral("/r/a.json-")));
        QVERIFY(a.endsWith(QStringLiteral(".recovery.json")));
        QVERIFY(a != b);   // same name, other folder: another file
        QCOMPARE(recoveryFileFor(QStringLiteral("/r"), QStringLiteral("/x/a.json")), a);
        QCOMPARE(recoveryFileFor(QStringLiteral("/r"), QString()), QStringLiteral("/r/untitled.recovery.json"));
        const QString odd = recoveryFileFor(QStringLiteral("/r"), QStringLiteral("/x/my cluster (1).json"));
        QVERIFY2(QFileInfo(odd).fileName().startsWith(QStringLiteral("my_cluster__1_.json-")), qPrintable(odd));
    }

    void recoveryFormat()
    {
        auto w = makeWindow();
        openCopy(w.get(), QStringLiteral("fmt.nestws.json"));
        edit(w->document());
        RecoveryData data{w->document()->workspace(), QStringLiteral("/some/file.json"),
                          WorkspaceDocument::FileKind::Cluster};
        const QString file = m_dir.filePath("fmt.recovery.json");
        writeText(file, recoveryToBytes(data));
        const Result<RecoveryData> back = readRecoveryFile(file);
        QVERIFY2(back.ok(), back.error().c_str());
        QVERIFY(back->workspace.cluster == data.workspace.cluster);
        QCOMPARE(back->workspace.model.toJson(), data.workspace.model.toJson());
        QCOMPARE(back->workspace.search, data.workspace.search);
        QCOMPARE(back->documentFile, data.documentFile);
        QCOMPARE(back->kind, WorkspaceDocument::FileKind::Cluster);
    }

    void badRecoveryFiles_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("expected");
        QTest::newRow("malformed") << QByteArray("{\"format\": ") << "bad.recovery.json";
        QTest::newRow("not recovery") << QByteArray(R"({"format": "nest-workspace"})") << "format";
        QTest::newRow("kind") << QByteArray(R"({"format": "nest-recovery", "version": 1, "document": "", "kind": "x",
            "workspace": {}})") << "kind";
        QTest::newRow("no workspace") << QByteArray(R"({"format": "nest-recovery", "version": 1, "document": "",
            "kind": "cluster"})") << "workspace";
        QTest::newRow("bad workspace") << QByteArray(R"({"format": "nest-recovery", "version": 1, "document": "",
            "kind": "cluster", "workspace": {"cluster": {"template": "fat-tree"}, "search": {"max_stages": -1}}})")
            << "search.max_stages";
    }

    void badRecoveryFiles()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, expected);
        const QString file = m_dir.filePath("bad.recovery.json");
        writeText(file, content);
        const Result<RecoveryData> r = readRecoveryFile(file);
        QVERIFY(!r.ok());
        const QString error = QString::fromStdString(r.error());
        QVERIFY2(error.contains(QStringLiteral("bad.recovery.json")), qPrintable(error));
        QVERIFY2(error.contains(expected), qPrintable(error));
    }

    void newerThanTheDocument()
    {
        const QString doc = m_dir.filePath("n.json"), rec = m_dir.filePath("n.recovery.json");
        writeText(doc, "{}");
        QVERIFY(!recoveryIsNewer(rec, doc));   // no recovery file
        writeText(rec, "{}");
        const QDateTime t0 = QDateTime::currentDateTime().addSecs(-100);
        setModified(doc, t0);
        setModified(rec, t0.addSecs(-10));
        QVERIFY(!recoveryIsNewer(rec, doc));   // older: the document was saved after it
        setModified(rec, t0.addSecs(10));
        QVERIFY(recoveryIsNewer(rec, doc));
        QVERIFY(recoveryIsNewer(rec, QString()));   // untitled: always
        QFile::remove(doc);
        QVERIFY(recoveryIsNewer(rec, doc));   // the document is gone
    }

    void autosavesOnATimerOnlyWhenModified()
    {
        auto w = makeWindow(1);
        QCOMPARE(w->autosaver()->intervalSeconds(), 1);
        const QString doc = openCopy(w.get(), QStringLiteral("timer.nestws.json"));
        const QByteArray userBytes = bytesOf(doc);
        const QString rec = w->autosaver()->recoveryFile();
        QCOMPARE(QFileInfo(rec).absolutePath(), QFileInfo(m_recoveryDir + "/x").absolutePath());
        QTest::qWait(1500);   // more than one interval, nothing modified
        QVERIFY(!QFile::exists(rec));
        QSignalSpy saved(w->autosaver(), &Autosaver::autosaved);
        edit(w->document());
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(rec), 5000);
        QCOMPARE(saved.count(), 1);
        QCOMPARE(bytesOf(doc), userBytes);   // the user's file is never written by autosave
        const Result<RecoveryData> data = readRecoveryFile(rec);
        QVERIFY2(data.ok(), data.error().c_str());
        QVERIFY(data->workspace.cluster == w->document()->topology());
        QCOMPARE(data->documentFile, doc);
        QCOMPARE(data->kind, WorkspaceDocument::FileKind::Workspace);
        // Unchanged since: no rewrite on the next ticks.
        QTest::qWait(1300);
        QCOMPARE(saved.count(), 1);
        // Undo back to the saved content: the next tick removes the recovery file.
        w->document()->undoStack()->undo();
        QVERIFY(!w->document()->isModified());
        QTRY_VERIFY_WITH_TIMEOUT(!QFile::exists(rec), 5000);
    }

    void recoveryNextToTheDocumentNeverOverwritesIt()
    {
        // Even with the recovery folder set to the document's own folder.
        const QString saved = m_recoveryDir;
        m_recoveryDir = m_dir.path();
        auto w = makeWindow();
        m_recoveryDir = saved;
        const QString doc = openCopy(w.get(), QStringLiteral("same.nestws.json"));
        const QByteArray userBytes = bytesOf(doc);
        edit(w->document());
        QString error;
        QVERIFY2(w->autosaver()->autosaveNow(&error), qPrintable(error));
        QVERIFY(w->autosaver()->recoveryFile() != doc);
        QVERIFY(QFile::exists(w->autosaver()->recoveryFile()));
        QCOMPARE(bytesOf(doc), userBytes);
        w->autosaver()->discardRecovery();
    }

    void cleanSaveAndCloseRemoveIt()
    {
        auto w = makeWindow();
        const QString doc = openCopy(w.get(), QStringLiteral("clean.nestws.json"));
        edit(w->document());
        QString error;
        QVERIFY2(w->autosaver()->autosaveNow(&error), qPrintable(error));
        const QString rec = w->autosaver()->recoveryFile();
        QVERIFY(QFile::exists(rec));
        QVERIFY2(w->saveWorkspace(doc, &error), qPrintable(error));
        QVERIFY(!QFile::exists(rec));
        // Close after "Discard": the recovery file goes too.
        QVERIFY(w->document()->setClusterName(QStringLiteral("renamed")));
        QVERIFY(w->autosaver()->autosaveNow(&error));
        QVERIFY(QFile::exists(rec));
        QVERIFY(w->close());
        QVERIFY(!QFile::exists(rec));
    }

    void saveAsRemovesTheUntitledRecovery()
    {
        auto w = makeWindow();
        openCopy(w.get(), QStringLiteral("base.nestws.json"));
        w->newDocument(w->document()->topology());
        QString error;
        QVERIFY(w->autosaver()->autosaveNow(&error));
        const QString untitled = recoveryFileFor(m_recoveryDir, QString());
        QVERIFY(QFile::exists(untitled));
        QVERIFY2(w->saveWorkspace(m_dir.filePath("named.nestws.json"), &error), qPrintable(error));
        QVERIFY(!QFile::exists(untitled));
    }

    void restoreAfterACrash()
    {
        QString doc;
        Topology edited;
        {
            auto a = makeWindow();
            doc = openCopy(a.get(), QStringLiteral("crash.nestws.json"));
            edit(a->document());
            QVERIFY(a->document()->setModel(ModelSource(Json{{"preset", "gpt3-35b"}})));
            edited = a->document()->topology();
            QString error;
            QVERIFY2(a->autosaver()->autosaveNow(&error), qPrintable(error));
            // "Crash": the window goes without closeEvent; the recovery file stays.
        }
        const QString rec = recoveryFileFor(m_recoveryDir, doc);
        QVERIFY(QFile::exists(rec));
        auto b = makeWindow();
        QString error;
        QVERIFY(b->openFile(doc, &error));   // opening the file offers its recovery
        QVERIFY(!b->offerRecovery());        // ...so start-up has nothing more to list
        QVERIFY(m_lists.isEmpty());
        QCOMPARE(m_offers, 1);
        QCOMPARE(m_lastOffer.documentFile, doc);
        QCOMPARE(m_lastOffer.recoveryFile, rec);
        WorkspaceDocument *d = b->document();
        QVERIFY(d->topology() == edited);
        QCOMPARE(d->model().toJson(), (Json{{"preset", "gpt3-35b"}}));
        QCOMPARE(d->fileName(), doc);
        QVERIFY(d->isModified());   // restored work is not on disk yet
        QCOMPARE(d->undoStack()->count(), 0);
        // Saving puts it on disk and removes the recovery file.
        QVERIFY2(b->saveWorkspace(doc, &error), qPrintable(error));
        QVERIFY(!QFile::exists(rec));
        const auto onDisk = loadWorkspace(doc.toStdString());
        QVERIFY(onDisk->cluster == edited);
        // Nothing left to offer.
        auto c = makeWindow();
        QVERIFY(c->openFile(doc, &error));
        QVERIFY(!c->offerRecovery());
        QCOMPARE(m_offers, 1);
    }

    void declineRemovesIt()
    {
        QString doc;
        {
            auto a = makeWindow();
            doc = openCopy(a.get(), QStringLiteral("decline.nestws.json"));
            edit(a->document());
            QString error;
            QVERIFY(a->autosaver()->autosaveNow(&error));
        }
        const QString rec = recoveryFileFor(m_recoveryDir, doc);
        m_restore = RecoveryChoice::Discard;
        auto b = makeWindow();
        QString error;
        QVERIFY(b->openFile(doc, &error));
        const Topology onDisk = b->document()->topology();
        QVERIFY(!b->offerRecovery());
        QCOMPARE(m_offers, 1);
        QVERIFY(!QFile::exists(rec));
        QVERIFY(b->document()->topology() == onDisk);
        QVERIFY(!b->document()->isModified());
    }

    void openOriginalKeepsTheRecovery()
    {
        // Issue 49: the prompt had only Yes / No, and No deleted the autosaved work. Open
        // Original opens the file as saved and keeps the work, offered at the next start.
        QString doc;
        Topology edited;
        {
            auto a = makeWindow();
            doc = openCopy(a.get(), QStringLiteral("original.nestws.json"));
            edit(a->document());
            edited = a->document()->topology();
            QString error;
            QVERIFY(a->autosaver()->autosaveNow(&error));
        }
        const QString rec = recoveryFileFor(m_recoveryDir, doc);
        m_restore = RecoveryChoice::OpenOriginal;
        Topology onDisk;
        {
            auto b = makeWindow();
            QString error;
            QVERIFY(b->openFile(doc, &error));
            QCOMPARE(m_offers, 1);
            onDisk = b->document()->topology();
            QVERIFY(!(onDisk == edited));
            QVERIFY(!b->document()->isModified());
            // Kept aside, where the autosave of the opened document never writes.
            QVERIFY(!QFile::exists(rec));
            const QStringList kept = recoveryFilesIn(m_recoveryDir);
            QCOMPARE(kept.size(), 1);
            QVERIFY2(kept.front().contains(QStringLiteral(".kept-")), qPrintable(kept.front()));
            // An edit autosaved now goes to the document's own recovery file.
            edit(b->document());
            QVERIFY(b->autosaver()->autosaveNow(&error));
            QVERIFY(QFile::exists(kept.front()));
            b->document()->undoStack()->undo();
            b->autosaver()->discardRecovery();
        }
        // The next start offers the kept work; restoring it gives the edited cluster back.
        m_answers = {RecoveryAnswer{RecoveryAnswer::Action::Restore, 0}};
        auto c = makeWindow();
        QVERIFY(c->offerRecovery());
        QCOMPARE(m_lists.size(), 1);
        QCOMPARE(m_lists.front().size(), 1);
        QCOMPARE(m_lists.front().front().documentFile, doc);
        QVERIFY(c->document()->topology() == edited);
    }

    void olderRecoveryIsNotOffered()
    {
        QString doc;
        {
            auto a = makeWindow();
            doc = openCopy(a.get(), QStringLiteral("older.nestws.json"));
            edit(a->document());
            QString error;
            QVERIFY(a->autosaver()->autosaveNow(&error));
        }
        const QString rec = recoveryFileFor(m_recoveryDir, doc);
        setModified(rec, QDateTime::currentDateTime().addSecs(-7200));   // before the document
        auto b = makeWindow();
        QString error;
        QVERIFY(b->openFile(doc, &error));
        QVERIFY(!b->offerRecovery());
        QCOMPARE(m_offers, 0);
    }

    void untitledWorkIsOffered()
    {
        Topology made;
        {
            auto a = makeWindow();
            openCopy(a.get(), QStringLiteral("u.nestws.json"));
            a->newDocument(a->document()->topology());
            edit(a->document());
            made = a->document()->topology();
            QString error;
            QVERIFY(a->autosaver()->autosaveNow(&error));
            QCOMPARE(a->autosaver()->recoveryFile(), recoveryFileFor(m_recoveryDir, QString()));
        }
        // Start-up opened some other file: the untitled work is listed.
        auto b = makeWindow();
        openCopy(b.get(), QStringLiteral("other.nestws.json"));
        m_answers = {{RecoveryAnswer::Action::Restore, 0}};
        QVERIFY(b->offerRecovery());
        QCOMPARE(m_lists.size(), 1);
        QCOMPARE(m_lists[0].size(), 1);
        QCOMPARE(m_lists[0][0].documentFile, QString());
        QVERIFY(b->document()->topology() == made);
        QVERIFY(b->document()->fileName().isEmpty());
        QVERIFY(b->document()->isModified());
    }

    void aLiveInstanceKeepsItsRecovery()
    {
        auto a = makeWindow();
        const QString doc = openCopy(a.get(), QStringLiteral("live.nestws.json"));
        edit(a->document());
        QString error;
        QVERIFY(a->autosaver()->autosaveNow(&error));
        // A second window (as a second process would) neither offers nor removes it.
        auto b = makeWindow();
        QVERIFY(b->openFile(doc, &error));
        QVERIFY(!b->offerRecovery());
        QCOMPARE(m_offers, 0);
        QVERIFY(QFile::exists(a->autosaver()->recoveryFile()));
        // ...and cannot autosave over it.
        edit(b->document());
        QVERIFY(!b->autosaver()->autosaveNow(&error));
        QVERIFY2(error.contains(QStringLiteral("another NEST Planner")), qPrintable(error));
    }

    void unreadableRecoveryIsKept()
    {
        auto a = makeWindow();
        const QString doc = openCopy(a.get(), QStringLiteral("corrupt.nestws.json"));
        a.reset();
        const QString rec = recoveryFileFor(m_recoveryDir, doc);
        QDir().mkpath(m_recoveryDir);
        writeText(rec, "{\"format\": \"nest-recovery\", ");
        auto b = makeWindow();
        QString error;
        QVERIFY(b->openFile(doc, &error));
        QVERIFY(!b->offerRecovery());
        QCOMPARE(m_offers, 0);
        QVERIFY(QFile::exists(rec));   // never deleted unasked
        QVERIFY2(b->lastStatus().contains(QFileInfo(rec).fileName()), qPrintable(b->lastStatus()));
    }

    // kill -9 while editing a named file, then a start with no file at all: the list names
    // it (and other work), and Restore brings the edit back under the file's name.
    void aStartWithNoFileListsEveryRecovery()
    {
        QString doc;
        Topology edited;
        {
            auto a = makeWindow();
            doc = openCopy(a.get(), QStringLiteral("nofile.nestws.json"));
            edit(a->document());
            edited = a->document()->topology();
            QString error;
            QVERIFY2(a->autosaver()->autosaveNow(&error), qPrintable(error));
        }
        {
            auto u = makeWindow();
            u->newDocument(edited);
            QVERIFY(u->document()->setModel(ModelSource(Json{{"preset", "gpt3-35b"}})));
            QString error;
            QVERIFY2(u->autosaver()->autosaveNow(&error), qPrintable(error));
        }
        const QString rec = recoveryFileFor(m_recoveryDir, doc);
        QVERIFY(QFile::exists(rec));
        auto b = makeWindow();   // nothing opened: the welcome page
        QCOMPARE(b->document()->topology().deviceCount(), 0);
        // First "Later": nothing changes and both files stay for the next start.
        QVERIFY(!b->offerRecovery());
        QCOMPARE(m_lists.size(), 1);
        QCOMPARE(m_lists[0].size(), 2);
        QStringList documents;
        for (const RecoveryOffer &o : m_lists[0])
            documents << o.documentFile;
        QVERIFY(documents.contains(doc));
        QVERIFY(documents.contains(QString()));
        QVERIFY(QFile::exists(rec));
        QCOMPARE(b->document()->topology().deviceCount(), 0);
        // Then restore the named one.
        const int index = documents.indexOf(doc);
        m_answers = {{RecoveryAnswer::Action::Restore, index}};
        QVERIFY(b->offerRecovery());
        WorkspaceDocument *d = b->document();
        QCOMPARE(d->fileName(), doc);
        QVERIFY(d->topology() == edited);
        QVERIFY(d->isModified());
        QCOMPARE(m_offers, 0);   // the list, not the single question
        // A clean save removes it; the untitled one is still offered at the next start.
        QString error;
        QVERIFY2(b->saveWorkspace(doc, &error), qPrintable(error));
        QVERIFY(!QFile::exists(rec));
        auto c = makeWindow();
        QVERIFY(!c->offerRecovery());
        QCOMPARE(m_lists.last().size(), 1);
        QCOMPARE(m_lists.last()[0].documentFile, QString());
    }

    // Discard removes the chosen file and asks again with what is left.
    void discardFromTheListAsksAgain()
    {
        QStringList docs;
        for (const char *name : {"d1.nestws.json", "d2.nestws.json"}) {
            auto a = makeWindow();
            docs << openCopy(a.get(), QString::fromLatin1(name));
            edit(a->document());
            QString error;
            QVERIFY2(a->autosaver()->autosaveNow(&error), qPrintable(error));
        }
        auto b = makeWindow();
        m_answers = {{RecoveryAnswer::Action::Discard, 0}};   // then Later
        QVERIFY(!b->offerRecovery());
        QCOMPARE(m_lists.size(), 2);
        QCOMPARE(m_lists[0].size(), 2);
        QCOMPARE(m_lists[1].size(), 1);
        const QString discarded = m_lists[0][0].documentFile;
        QVERIFY(!QFile::exists(recoveryFileFor(m_recoveryDir, discarded)));
        QVERIFY(m_lists[1][0].documentFile != discarded);
        QVERIFY(QFile::exists(recoveryFileFor(m_recoveryDir, m_lists[1][0].documentFile)));
    }

    // File ▸ Open Recent on a file with a recovery offers it, as a file named on the command
    // line does.
    void openRecentOffersTheRecovery()
    {
        QString doc;
        Topology edited;
        {
            auto a = makeWindow();
            doc = openCopy(a.get(), QStringLiteral("recent.nestws.json"));
            edit(a->document());
            edited = a->document()->topology();
            QString error;
            QVERIFY2(a->autosaver()->autosaveNow(&error), qPrintable(error));
        }
        auto b = makeWindow();
        b->settings().addRecentFile(doc);
        openCopy(b.get(), QStringLiteral("recent-other.nestws.json"));   // refreshes the menu
        QMenu *recent = nullptr;
        for (QAction *a : b->menuBar()->actions())
            if (a->menu())
                for (QAction *sub : a->menu()->actions())
                    if (sub->menu() && sub->text().remove(QLatin1Char('&')) == QStringLiteral("Open Recent"))
                        recent = sub->menu();
        QVERIFY(recent);
        QAction *entry = nullptr;
        for (QAction *a : recent->actions())
            if (a->toolTip() == doc)
                entry = a;
        QVERIFY(entry);
        entry->trigger();
        QCOMPARE(m_offers, 1);
        QCOMPARE(m_lastOffer.documentFile, doc);
        QCOMPARE(b->document()->fileName(), doc);
        QVERIFY(b->document()->topology() == edited);
        QVERIFY(b->document()->isModified());
    }
};

QTEST_MAIN(TestAutosaveRecovery)
#include "test_autosave_recovery.moc"
