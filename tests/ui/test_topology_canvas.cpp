// The topology canvas: dragging a node between racks with simulated mouse events, refused
// drops, undo/redo through the canvas, selection sync, zoom clamping, level of detail and
// the screenshot/export paths. Cluster: sample_configs/workspaces/quickstart.nestws.json
// (rack0: node0..2, rack1: node3..6; 56 devices).
#include "WorkspaceDocument.h"
#include "DiagramExport.h"
#include "MainWindow.h"
#include "TopologyItems.h"
#include "TopologyScene.h"
#include "TopologyView.h"
#include "ClusterTemplates.h"

#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QXmlStreamReader>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

// A press-move-release drag in several steps (beyond the start-drag distance).
void drag(QGraphicsView *view, QPointF fromScene, QPointF toScene)
{
    QWidget *vp = view->viewport();
    const QPoint from = view->mapFromScene(fromScene);
    const QPoint to = view->mapFromScene(toScene);
    QTest::mousePress(vp, Qt::LeftButton, Qt::NoModifier, from);
    for (int i = 1; i <= 8; ++i)
        QTest::mouseMove(vp, from + (to - from) * i / 8);
    QTest::mouseRelease(vp, Qt::LeftButton, Qt::NoModifier, to);
}

} // namespace

class TestTopologyCanvas : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> m_window;

    WorkspaceDocument *doc() const { return m_window->document(); }
    TopologyScene *scene() const { return m_window->scene(); }
    TopologyView *view() const { return m_window->view(); }
    // A point in node `name`'s title bar (not on a device square).
    QPointF grip(const std::string &name) const
    {
        const QRectF r = scene()->groupRect(groupNamed(doc()->topology(), name));
        return r.topLeft() + QPointF(10, 6);
    }

private slots:
    void init()
    {
        m_window = std::make_unique<MainWindow>(nullptr, std::make_unique<Settings>(m_dir.filePath("s.ini")));
        QString error;
        QVERIFY2(m_window->openFile(kQuickstart, &error), qPrintable(error));
        m_window->resize(1400, 900);
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
        view()->fitToView();
        QCoreApplication::processEvents();
    }

    void cleanup() { m_window.reset(); }

    void sceneMirrorsTheTree()
    {
        int nodes = 0, groups = 0;
        for (QGraphicsItem *item : scene()->items()) {
            nodes += item->type() == NodeItemType ? 1 : 0;
            groups += item->type() == GroupItemType ? 1 : 0;
        }
        QCOMPARE(nodes, 7);   // node0..node6
        QCOMPARE(groups, 3);  // spine0, rack0, rack1
        // node0 is drawn inside rack0's frame.
        const QRectF rack0 = scene()->groupRect(groupNamed(doc()->topology(), "rack0"));
        QVERIFY(rack0.contains(scene()->groupRect(groupNamed(doc()->topology(), "node0"))));
    }

    void dragNodeToAnotherRack()
    {
        const Topology before = doc()->topology();
        const int rack1 = groupNamed(before, "rack1");
        drag(view(), grip("node0"), scene()->dropPoint(rack1));
        const Topology &t = doc()->topology();
        QCOMPARE(t.groups[groupNamed(t, "node0")].parent, groupNamed(t, "rack1"));
        QCOMPARE(t.groups[groupNamed(t, "rack0")].children.size(), size_t(2));
        QCOMPARE(t.groups[groupNamed(t, "rack1")].children.size(), size_t(5));
        QCOMPARE(t.groups[groupNamed(t, "rack1")].children.back(), groupNamed(t, "node0"));
        QCOMPARE(doc()->undoStack()->count(), 1);  // the whole drag is one command
        const Topology after = t;
        // The canvas was rebuilt: node0 now sits inside rack1's frame.
        QVERIFY(scene()->groupRect(groupNamed(t, "rack1")).contains(scene()->groupRect(groupNamed(t, "node0"))));
        doc()->undoStack()->undo();
        QVERIFY(doc()->topology() == before);
        QVERIFY(scene()->groupRect(groupNamed(before, "rack0")).contains(scene()->groupRect(groupNamed(before, "node0"))));
        doc()->undoStack()->redo();
        QVERIFY(doc()->topology() == after);
    }

    void dropOnRackBodyAlsoWorks()
    {
        // Anywhere on the rack frame that is not a node: here its header beside the switch.
        const QRectF rack1 = scene()->groupRect(groupNamed(doc()->topology(), "rack1"));
        drag(view(), grip("node2"), rack1.topLeft() + QPointF(6, 6));
        const Topology &t = doc()->topology();
        QCOMPARE(t.groups[groupNamed(t, "node2")].parent, groupNamed(t, "rack1"));
    }

    // Issue 25 point 5: a node dropped onto another rack's node, or one of its devices, goes
    // into that rack (it used to be refused unless it landed in the rack's thin free slot).
    void dropOnAnotherRacksNodeMovesIntoThatRack_data()
    {
        QTest::addColumn<QString>("target");
        QTest::newRow("a node's title") << "node4";
        QTest::newRow("a device of a node") << "device-of-node5";
    }

    void dropOnAnotherRacksNodeMovesIntoThatRack()
    {
        QFETCH(QString, target);
        const Topology &t = doc()->topology();
        const QPointF to = target == "node4" ? grip("node4")
                                             : deviceRect(scene()->groupRect(groupNamed(t, "node5")), 8, 3).center();
        QSignalSpy refused(scene(), &TopologyScene::dropRefused);
        drag(view(), grip("node0"), to);
        QCOMPARE(refused.count(), 0);
        const Topology &after = doc()->topology();
        QCOMPARE(after.groups[groupNamed(after, "node0")].parent, groupNamed(after, "rack1"));
        QCOMPARE(doc()->undoStack()->count(), 1);
    }

    void invalidDropsAreRefused_data()
    {
        QTest::addColumn<QString>("target");
        QTest::addColumn<QString>("reason");  // a word the message must contain
        QTest::newRow("a node of its own rack") << "node1" << "already in";
        QTest::newRow("empty space") << "empty" << "empty space";
        QTest::newRow("its own rack") << "rack0" << "already in";
        QTest::newRow("the spine switch") << "spine0" << "only be dropped";
    }

    void invalidDropsAreRefused()
    {
        QFETCH(QString, target);
        QFETCH(QString, reason);
        const Topology &t = doc()->topology();
        QPointF to;
        if (target == "node1")
            to = grip("node1");
        else if (target == "empty")
            to = scene()->diagramRect().bottomRight() - QPointF(5, 5);
        else if (target == "rack0")
            to = scene()->dropPoint(groupNamed(t, "rack0"));
        else
            to = scene()->topologyLayout().boxes[t.root].switchRect.center();
        const Topology before = t;
        QSignalSpy refused(scene(), &TopologyScene::dropRefused);
        drag(view(), grip("node0"), to);
        QCOMPARE(refused.count(), 1);
        const QString message = refused.at(0).at(0).toString();
        QVERIFY2(message.contains(reason), qPrintable(message));
        QVERIFY(doc()->topology() == before);
        QCOMPARE(doc()->undoStack()->count(), 0);
        QVERIFY(m_window->lastStatus().contains(reason));
        // The dragged item is back where the layout puts it.
        NodeItem *item = scene()->nodeItem(groupNamed(before, "node0"));
        QVERIFY(item);
        QCOMPARE(item->pos(), QPointF(0, 0));
    }

    void dropThatEmptiesARackIsRefused()
    {
        // Move node1 and node2 out first; then node0 is rack0's last node.
        // (Group indices change with every structural edit: look them up each time.)
        QVERIFY(doc()->moveNode(groupNamed(doc()->topology(), "node1"), groupNamed(doc()->topology(), "rack1")));
        QVERIFY(doc()->moveNode(groupNamed(doc()->topology(), "node2"), groupNamed(doc()->topology(), "rack1")));
        const Topology before = doc()->topology();
        QSignalSpy refused(doc(), &WorkspaceDocument::editRefused);
        drag(view(), grip("node0"), scene()->dropPoint(groupNamed(before, "rack1")));
        QCOMPARE(refused.count(), 1);
        QVERIFY(refused.at(0).at(0).toString().contains("empty"));
        QVERIFY(doc()->topology() == before);
    }

    void clickSelectsAndSyncs()
    {
        const QPoint p = view()->mapFromScene(grip("node5"));
        QTest::mouseClick(view()->viewport(), Qt::LeftButton, Qt::NoModifier, p);
        QCOMPARE(doc()->selectedGroups(), QList<int>{groupNamed(doc()->topology(), "node5")});
        // Document -> scene.
        const int rack0 = groupNamed(doc()->topology(), "rack0");
        doc()->setSelection({doc()->uidOf(rack0)});
        QVERIFY(scene()->groupItem(rack0)->isSelected());
        QVERIFY(!scene()->nodeItem(groupNamed(doc()->topology(), "node5"))->isSelected());
    }

    void rubberBandSelectsSeveralNodes()
    {
        // A band around rack1's nodes only (not the whole rack frame).
        const Topology &t = doc()->topology();
        QRectF band;
        for (const char *n : {"node3", "node4", "node5"})
            band = band.united(scene()->groupRect(groupNamed(t, n)));
        band.adjust(-6, -6, 6, 6);
        doc()->setSelection({});
        // Start in the empty area left of rack1 (not on an item), so the view rubber-bands.
        const QRectF rack1 = scene()->groupRect(groupNamed(t, "rack1"));
        const QPointF start(rack1.left() - 8, band.top());
        const QPoint a = view()->mapFromScene(start), b = view()->mapFromScene(band.bottomRight());
        QTest::mousePress(view()->viewport(), Qt::LeftButton, Qt::NoModifier, a);
        for (int i = 1; i <= 6; ++i)
            QTest::mouseMove(view()->viewport(), a + (b - a) * i / 6);
        QTest::mouseRelease(view()->viewport(), Qt::LeftButton, Qt::NoModifier, b);
        QList<int> sel = doc()->selectedGroups();
        std::sort(sel.begin(), sel.end());
        QList<int> expected{groupNamed(t, "node3"), groupNamed(t, "node4"), groupNamed(t, "node5")};
        std::sort(expected.begin(), expected.end());
        QCOMPARE(sel, expected);
    }

    void zoomIsClamped()
    {
        for (int i = 0; i < 60; ++i)
            view()->zoomIn();
        QCOMPARE(view()->zoom(), TopologyView::kMaxZoom);
        for (int i = 0; i < 120; ++i)
            view()->zoomOut();
        QCOMPARE(view()->zoom(), TopologyView::kMinZoom);
        view()->fitToView();
        QVERIFY(view()->zoom() > TopologyView::kMinZoom && view()->zoom() < TopologyView::kMaxZoom);
    }

    void canvasRefitsAfterTheDiagramGrows()
    {
        // Issue 49: Add Rack, Import Topology and a resize left the old zoom, the new racks
        // off-screen and the legend over the spine. While the user has not zoomed, the view
        // fits again; a user's zoom stays.
        const auto diagramShown = [this] {
            const QRectF shown = view()->mapToScene(view()->viewport()->rect()).boundingRect();
            return shown.contains(scene()->diagramRect());
        };
        QVERIFY(diagramShown());
        const int spine = groupNamed(doc()->topology(), "spine0");
        for (int i = 0; i < 4; ++i)
            QVERIFY(doc()->addRack(spine));
        QTRY_VERIFY(diagramShown());
        m_window->resize(1024, 700);
        QTRY_VERIFY(diagramShown());
        view()->zoomIn();
        const double zoomed = view()->zoom();
        QVERIFY(doc()->addRack(spine));
        QCoreApplication::processEvents();
        QCOMPARE(view()->zoom(), zoomed);
    }

    // The topology diagram's own export (MainWindow::exportView hands it the canvas while
    // the Topology tab is current; the quickstart's plan brings the Placement tab forward).
    void screenshotAndExport()
    {
        const QImage shot = m_window->grab().toImage();
        QCOMPARE(shot.size(), QSize(1400, 900));
        // Not blank: the canvas has device colours and dark switch glyphs.
        QSet<QRgb> colours;
        for (int y = 0; y < shot.height(); y += 7)
            for (int x = 0; x < shot.width(); x += 7)
                colours.insert(shot.pixel(x, y));
        QVERIFY(colours.size() > 20);
        QString error;
        const QString png = m_dir.filePath("view.png");
        QVERIFY2(exportDiagram(scene(), png, &error), qPrintable(error));
        QImage back(png);
        QVERIFY(!back.isNull());
        // 2x the picture: the diagram rectangle (TopologyScene::diagramRect) with a title
        // band above it and one legend row per level and device type below it (issue 49).
        const QSize diagram = (scene()->diagramRect().size() * 2).toSize();
        const Topology &t = doc()->topology();
        QVERIFY(back.width() >= diagram.width());
        const int rows = t.levelCount() + int(t.deviceTypes.size());
        QVERIFY2(back.height() >= diagram.height() + 2 * (20 * rows + 40),
                 qPrintable(QStringLiteral("%1 vs %2").arg(back.height()).arg(diagram.height())));
        const QString svg = m_dir.filePath("view.svg");
        QVERIFY2(exportDiagram(scene(), svg, &error), qPrintable(error));
        QFile f(svg);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.contains("<svg"));
        QVERIFY(text.contains("viewBox"));
        QVERIFY(text.contains("quickstart-2-racks"));  // the title
        // The legend, as text: every level by name with its bandwidth, every device type.
        QXmlStreamReader xml(text);
        QString words;
        while (!xml.atEnd())
            if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("text"))
                words += xml.readElementText(QXmlStreamReader::IncludeChildElements) + QLatin1Char('\n');
        for (int l = 0; l < t.levelCount(); ++l) {
            const QString line = QStringLiteral("level %1, %2: %3 GB/s per device")
                                     .arg(l)
                                     .arg(QString::fromStdString(t.levels[size_t(l)].name))
                                     .arg(t.levels[size_t(l)].link.bandwidth / 1e9, 0, 'g', 4);
            QVERIFY2(words.contains(line), qPrintable(line + QStringLiteral(" in\n") + words.right(600)));
        }
        for (size_t type = 0; type < t.deviceTypes.size(); ++type) {
            int count = 0;
            for (const TopoGroup &g : t.groups)   // counted from the nodes, not from Device::type
                if (g.level == 0 && g.deviceType == int(type))
                    count += int(g.devices.size());
            const QString line = QStringLiteral("device %1: %2 in the cluster")
                                     .arg(QString::fromStdString(t.deviceTypes[type].name)).arg(count);
            QVERIFY2(words.contains(line), qPrintable(line + QStringLiteral(" in\n") + words.right(400)));
        }
        QVERIFY(words.contains(QStringLiteral("%1 devices").arg(t.deviceCount())));  // the subtitle
        // An unwritable target is reported, not ignored.
        QVERIFY(!exportDiagram(scene(), QStringLiteral("/nonexistent-dir/x.png"), &error));
        QVERIFY(error.contains("/nonexistent-dir/x.png"));
    }

    void pdfKeepsNamesAsText()
    {
        QString error;
        const QString pdf = m_dir.filePath("view.pdf");
        QVERIFY2(exportDiagram(scene(), pdf, &error), qPrintable(error));
        QVERIFY(bytesOf(pdf).startsWith("%PDF"));
        QProcess probe;
        probe.start(QStringLiteral("pdftotext"), {QStringLiteral("-v")});
        if (!probe.waitForFinished(10000) || probe.exitStatus() != QProcess::NormalExit)
            QSKIP("pdftotext is not installed");
        // -bbox: every word with its box in PDF points (1 point = 1 scene unit here).
        QProcess p;
        p.start(QStringLiteral("pdftotext"), {QStringLiteral("-bbox"), pdf, QStringLiteral("-")});
        QVERIFY(p.waitForFinished(30000));
        QCOMPARE(p.exitCode(), 0);
        const QString text = QString::fromUtf8(p.readAllStandardOutput());
        QHash<QString, double> height;
        static const QRegularExpression word(
            QStringLiteral("<word xMin=\"([\\d.]+)\" yMin=\"([\\d.]+)\" xMax=\"([\\d.]+)\" yMax=\"([\\d.]+)\">([^<]*)</word>"));
        for (auto it = word.globalMatch(text); it.hasNext();) {
            const auto m = it.next();
            height.insert(m.captured(5), m.captured(4).toDouble() - m.captured(2).toDouble());
        }
        // Every group of the cluster (switches, racks, nodes) is there as text...
        const Topology &t = doc()->topology();
        for (const TopoGroup &g : t.groups)
            QVERIFY2(height.contains(QString::fromStdString(g.name)), g.name.c_str());
        QCOMPARE(static_cast<int>(t.groups.size()), 10);
        // ...at the size it has on screen (11-12 px names: boxes of 10-17 points), not as
        // glyphs scaled by the writer's 1200 dpi.
        for (const char *name : {"spine0", "rack0", "rack1", "node0", "node6"}) {
            const double h = height.value(QLatin1String(name));
            QVERIFY2(h > 8 && h < 18, qPrintable(QStringLiteral("%1: %2 pt").arg(name).arg(h)));
        }
    }

    void unknownExportFormatIsRefused()
    {
        QString error;
        QVERIFY(!exportDiagram(scene(), m_dir.filePath("view.bmp"), &error));
        QVERIFY2(error.startsWith(m_dir.filePath("view.bmp") + ": unknown image format"), qPrintable(error));
        QVERIFY(!QFile::exists(m_dir.filePath("view.bmp")));
    }

    void largeClusterStaysFast()
    {
        auto big = makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 4}, {"racks", 128}});
        QVERIFY2(big.ok(), big.error().c_str());
        QElapsedTimer timer;
        timer.start();
        m_window->newDocument(*big);  // 4096 devices
        view()->fitToView();
        const QImage shot = m_window->grab().toImage();
        const qint64 ms = timer.elapsed();
        QVERIFY(!shot.isNull());
        qInfo("4096 devices: load + layout + fit + render in %lld ms", ms);
        QVERIFY2(ms < 5000, qPrintable(QString::number(ms)));
        int nodes = 0;
        for (QGraphicsItem *item : scene()->items())
            nodes += item->type() == NodeItemType ? 1 : 0;
        QCOMPARE(nodes, 4 * 128);  // one item per node, none per device
    }
};

QTEST_MAIN(TestTopologyCanvas)
#include "test_topology_canvas.moc"
