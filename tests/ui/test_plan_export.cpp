// File ▸ Export Plan As (issue 21): the five framework entries, disabled without a plan;
// a pinned plan exported with its own cluster and model, the fallback stated with both
// times, every file written beside the main one (the launch script executable), and an
// unwritable target refused with its name.
#include "MainWindow.h"
#include "PlanExport.h"
#include "PlanSession.h"
#include "Settings.h"

#include "JsonUtil.h"

#include <QFile>
#include <QMenu>
#include <QTemporaryDir>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;

class TestPlanExport : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

private slots:
    void menuListsTheFrameworks()
    {
        MainWindow w(nullptr, std::make_unique<Settings>(m_dir.filePath("a.ini")));
        auto *menu = w.findChild<QMenu *>(QStringLiteral("exportPlanAsMenu"));
        QVERIFY(menu);
        QStringList titles;
        for (QAction *a : menu->actions())
            titles << a->text();
        QCOMPARE(titles, (QStringList{QStringLiteral("Megatron-LM…"), QStringLiteral("NeMo…"),
                                      QStringLiteral("DeepSpeed…"), QStringLiteral("torchtitan…"),
                                      QStringLiteral("NEST Artifact JSON (the Paper Solver's Output)…")}));
        QVERIFY(!menu->isEnabled());  // no plan yet
        QString summary, error;
        QVERIFY(!w.exportPlanFiles(ExportFormat::Megatron, m_dir.filePath("none.sh"), &summary, &error));
        QVERIFY2(error.contains(QStringLiteral("no plan")), qPrintable(error));
    }

    void pinnedPlanExportsWithItsTimes()
    {
        MainWindow w(nullptr, std::make_unique<Settings>(m_dir.filePath("b.ini")));
        QString error;
        QVERIFY2(w.openFile(uitest::kQuickstart, &error), qPrintable(error));
        w.planning()->showPinned(0);
        QTRY_VERIFY(w.planning()->current() != nullptr);
        const PlanSnapshotPtr shown = w.planning()->current();
        auto *menu = w.findChild<QMenu *>(QStringLiteral("exportPlanAsMenu"));
        QTRY_VERIFY(menu->isEnabled());

        const QString main = m_dir.filePath("run.sh");
        QString summary;
        QVERIFY2(w.exportPlanFiles(ExportFormat::Megatron, main, &summary, &error), qPrintable(error));
        for (const QString &name : {QStringLiteral("run.sh"), QStringLiteral("run.ranks.json"), QStringLiteral("run.hostfile")})
            QVERIFY2(QFile::exists(m_dir.filePath(name)), qPrintable(name));
        QVERIFY(QFile(main).permissions() & QFileDevice::ExeOwner);

        // The times are the evaluator's on the plan the views show, and on the exported one.
        const auto result = exportPlan(exportRequestFor(*shown), ExportFormat::Megatron);
        QVERIFY(result.ok());
        QCOMPARE(result->original.iterationTime, shown->report().iterationTime);
        QCOMPARE(summary, QString::fromStdString(result->summary()));
        if (result->fellBack())
            QVERIFY2(summary.contains(QStringLiteral("instead of")), qPrintable(summary));

        // The rank map lists every device of the exported plan once.
        QFile mapFile(m_dir.filePath("run.ranks.json"));
        QVERIFY(mapFile.open(QIODevice::ReadOnly));
        const Json map = Json::parse(mapFile.readAll().toStdString());
        QCOMPARE(int(map["ranks"].size()), result->runnable.plan.deviceCount());
        QVERIFY(w.lastStatus().contains(QStringLiteral("Exported the plan for Megatron-LM")));

        QVERIFY(!w.exportPlanFiles(ExportFormat::Nemo, QStringLiteral("/etc/hostname/x.yaml"), &summary, &error));
        QVERIFY2(error.contains(QStringLiteral("x.yaml")), qPrintable(error));
    }
};

QTEST_MAIN(TestPlanExport)
#include "test_plan_export.moc"
