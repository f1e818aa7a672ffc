// Large clusters through the New-from-template path: the paper's spine-leaf (1024 H100) and
// a 4-SU DGX SuperPOD-like cluster (1024 H100) chosen as presets in TemplateDialog, loaded
// into the window; the canvas builds (time printed, not asserted) and fit-to-view shows
// every item without hitting the zoom clamp.
#include "WorkspaceDocument.h"
#include "MainWindow.h"
#include "TemplateDialog.h"
#include "ClusterTemplates.h"
#include "TopologyItems.h"
#include "TopologyScene.h"
#include "TopologyView.h"

#include <QComboBox>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

using namespace nest;
using namespace nest::ui;

namespace {
int groupsAtLevel(const Topology &t, int level)
{
    int n = 0;
    for (const TopoGroup &g : t.groups)
        n += g.level == level ? 1 : 0;
    return n;
}
} // namespace

class TestLargeClusters : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

private slots:
    void presetsInTheDialog()
    {
        TemplateDialog dialog;
        QVERIFY(!dialog.setPreset(QStringLiteral("no-such-preset")));
        QCOMPARE(dialog.presetKey(), QString());
        QVERIFY(dialog.setPreset(QStringLiteral("superpod-h100-256")));
        QCOMPARE(QString::fromStdString(dialog.templateKey()), QStringLiteral("superpod"));
        QCOMPARE(dialog.params().at("sus"), 1.0);
        // Editing a parameter makes it a custom cluster (the preset no longer describes it).
        QVERIFY(dialog.setParam(QStringLiteral("sus"), 2));
        QCOMPARE(dialog.presetKey(), QString());
        QCOMPARE(dialog.cluster()->deviceCount(), 2 * 32 * 8);
        // Choosing the preset again resets every parameter to the preset's.
        QVERIFY(dialog.setParam(QStringLiteral("gpus_per_node"), 4));
        QVERIFY(dialog.setPreset(QStringLiteral("superpod-h100-256")));
        QCOMPARE(dialog.cluster()->deviceCount(), 256);
    }

    void largeCluster_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("level1");
        QTest::addColumn<QString>("device");
        // Paper §5.3: 1024 H100, 8 per node -> 128 nodes, 4 nodes per leaf -> 32 leaves.
        QTest::newRow("paper-spineleaf-1024") << "paper-spineleaf-1024" << 1024 << 128 << 32 << "h100-sxm-80gb";
        // DGX SuperPOD RA: 4 SUs x 32 DGX H100 x 8 GPUs = 1024; level 1 = the 4 SUs.
        QTest::newRow("superpod-h100-1024") << "superpod-h100-1024" << 1024 << 128 << 4 << "h100-sxm-80gb";
    }

    void largeCluster()
    {
        QFETCH(QString, preset);
        QFETCH(int, devices);
        QFETCH(int, nodes);
        QFETCH(int, level1);
        QFETCH(QString, device);

        TemplateDialog dialog;
        QVERIFY(dialog.setPreset(preset));
        auto *combo = dialog.findChild<QComboBox *>(QStringLiteral("preset"));
        QVERIFY(combo);
        QCOMPARE(combo->currentText(), preset);
        const Result<Topology> t = dialog.cluster();
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), devices);
        QCOMPARE(groupsAtLevel(*t, 0), nodes);
        QCOMPARE(groupsAtLevel(*t, 1), level1);
        QCOMPARE(t->deviceTypes.at(0).name, device.toStdString());
        // The same size as core's preset of that name.
        const Result<Topology> sample = clusterPreset(preset.toStdString());
        QVERIFY(sample.ok());
        QCOMPARE(sample->deviceCount(), devices);

        MainWindow w(nullptr, std::make_unique<Settings>(m_dir.filePath("s.ini")));
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QElapsedTimer timer;
        timer.start();
        w.newDocument(*t);
        const qint64 buildMs = timer.elapsed();
        w.view()->fitToView();
        QCoreApplication::processEvents();
        const QImage shot = w.grab().toImage();
        qDebug("%s: %d devices, canvas built in %lld ms, fit + first paint %lld ms", qPrintable(preset),
               devices, buildMs, timer.elapsed() - buildMs);
        QVERIFY(!shot.isNull());

        int nodeItems = 0;
        for (QGraphicsItem *item : w.scene()->items())
            nodeItems += item->type() == NodeItemType ? 1 : 0;
        QCOMPARE(nodeItems, nodes);

        // Fit to view: everything in the viewport, and the zoom not clamped at its minimum.
        TopologyView *view = w.view();
        QVERIFY2(view->zoom() > TopologyView::kMinZoom, qPrintable(QString::number(view->zoom())));
        const QRectF visible = view->mapToScene(view->viewport()->rect()).boundingRect();
        const QRectF all = w.scene()->itemsBoundingRect();
        QVERIFY2(visible.contains(all), qPrintable(QStringLiteral("visible %1,%2 %3x%4, items %5,%6 %7x%8")
                                                       .arg(visible.x()).arg(visible.y()).arg(visible.width())
                                                       .arg(visible.height()).arg(all.x()).arg(all.y())
                                                       .arg(all.width()).arg(all.height())));
        // Nothing hides under the legend in the top-left corner.
        const QRectF legend = view->mapToScene(view->legendRect()).boundingRect();
        QVERIFY(!legend.isEmpty());
        for (QGraphicsItem *item : w.scene()->items())
            if (item->type() == NodeItemType || item->type() == GroupItemType)
                QVERIFY2(!item->sceneBoundingRect().intersects(legend), qPrintable(preset));
        // The diagram fills the viewport in at least one direction (not a speck in a corner).
        const QRectF diagram = w.scene()->diagramRect();
        QVERIFY(diagram.width() > 0.8 * visible.width() || diagram.height() > 0.8 * visible.height());
    }
};

QTEST_MAIN(TestLargeClusters)
#include "test_large_clusters.moc"
