// Legibility of the topology canvas (issue 9, points 3-6 and 10): edits repaint the items
// and the legend they affect, links are coloured by level (overrides marked, not recoloured),
// zoomed-out racks and pods are labelled blocks, wide trees fill the view, node headers do
// not overlap, multi-selection drags and context menus.
// With NEST_SHOT_DIR set, screenshots() writes PNGs of the fitted canvas for inspection.
#include "WorkspaceDocument.h"
#include "ClusterIO.h"
#include "ClusterTemplates.h"
#include "DeviceSpec.h"
#include "TopologyLayout.h"
#include "Workspace.h"
#include "TopologyItems.h"
#include "TopologyScene.h"
#include "TopologyView.h"

#include <QMenu>
#include <QScreen>
#include <QUndoStack>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

Topology cluster(const std::string &key, const std::map<std::string, double> &params = {})
{
    Result<Topology> t = params.empty() ? resolveCluster(key) : makeCluster(key, params);
    if (!t.ok())
        qFatal("%s: %s", key.c_str(), t.error().c_str());
    return *t;
}

// A document, its scene and a shown view of `size`, fitted.
struct Canvas {
    WorkspaceDocument doc;
    std::unique_ptr<TopologyScene> scene;
    std::unique_ptr<TopologyView> view;

    explicit Canvas(const Topology &t, QSize size = QSize(1000, 700))
    {
        Workspace w;
        w.cluster = t;
        doc.load(std::move(w), QString(), WorkspaceDocument::FileKind::Cluster);
        scene = std::make_unique<TopologyScene>(&doc);
        view = std::make_unique<TopologyView>(scene.get());
        view->resize(size);
        view->show();
        QVERIFY(QTest::qWaitForWindowExposed(view.get()));
        view->fitToView();
        QCoreApplication::processEvents();
    }
};

template <typename T>
QList<T *> itemsOf(QGraphicsScene *scene, int type)
{
    QList<T *> out;
    for (QGraphicsItem *item : scene->items())
        if (item->type() == type)
            out.append(static_cast<T *>(item));
    return out;
}

int firstAtLevel(const Topology &t, int level)
{
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].level == level)
            return g;
    return -1;
}

QStringList actionTexts(const QMenu *menu)
{
    QStringList out;
    for (const QAction *a : menu->actions())
        if (!a->isSeparator())
            out << a->text();
    return out;
}

QAction *actionNamed(const QMenu *menu, const QString &text)
{
    for (QAction *a : menu->actions())
        if (a->text() == text)
            return a;
    return nullptr;
}

// Every link item mirrors the document: one per laid-out link, each with its group's
// effective bandwidth, level and override flag.
void checkLinks(Canvas &c)
{
    const Topology &t = c.doc.topology();
    const QList<LinkItem *> links = itemsOf<LinkItem>(c.scene.get(), LinkItemType);
    QCOMPARE(links.size(), static_cast<qsizetype>(c.scene->topologyLayout().links.size()));
    for (const LinkItem *l : links) {
        QCOMPARE(l->bandwidth(), t.link(l->group()).bandwidth);
        QCOMPARE(l->level(), t.groups[l->group()].level);
        QCOMPARE(l->isOverridden(), t.groups[l->group()].linkOverride.has_value());
    }
}

} // namespace

class TestCanvasLegibility : public QObject {
    Q_OBJECT
private slots:
    void editsRepaintLegendAndLinks();
    void coloursByLevel_data();
    void coloursByLevel();
    void nodeHeadersDoNotOverlap_data();
    void nodeHeadersDoNotOverlap();
    void largeClustersAreBlocks();
    void podAndSpineNamesStayInTheirHeaders();
    void wideTreesFillTheView_data();
    void wideTreesFillTheView();
    void multiSelectionDragMovesAll();
    void contextMenus();

    void screenshots()
    {
        const QString dir = qEnvironmentVariable("NEST_SHOT_DIR");
        if (dir.isEmpty())
            QSKIP("set NEST_SHOT_DIR to write screenshots");
        const std::vector<std::pair<QString, Topology>> clusters = {
            {"torus3d", cluster("torus3d-tpuv4-64")},
            {"spineleaf64", cluster("paper-spineleaf-64")},
            {"v100-16", cluster("paper-v100-16")},
            {"spineleaf1024", cluster("paper-spineleaf-1024")},
            {"superpod1024", cluster("superpod-h100-1024")},
            {"superpod16384", cluster("superpod", {{"sus", 64}})},
            {"node4", cluster("superpod", {{"sus", 4}, {"gpus_per_node", 4}})},
        };
        for (const auto &[name, t] : clusters) {
            Canvas c(t);
            qDebug("%s: zoom %.3f", qPrintable(name), c.view->zoom());
            QVERIFY(c.view->grab().save(dir + "/" + name + ".png"));
        }
    }
};


void TestCanvasLegibility::editsRepaintLegendAndLinks()
{
    // paper-spineleaf-64: node 900 GB/s, rack 12.5 GB/s, spine 12.5 GB/s.
    Canvas c(cluster("paper-spineleaf-64"));
    QVERIFY(c.view->legendLines().at(1).contains(QStringLiteral("12.5 GB/s")));
    LinkParams link = c.doc.topology().levels[1].link;
    link.bandwidth = 400e9;
    QVERIFY(c.doc.setLevelLink(1, link));
    QCoreApplication::processEvents();
    // No fit: the legend and the link items already say 400 GB/s.
    QVERIFY2(c.view->legendLines().at(1).contains(QStringLiteral("400 GB/s")), qPrintable(c.view->legendLines().join('|')));
    checkLinks(c);
    // What is on screen (the backing store, painted incrementally) equals a full repaint in
    // the legend: nothing stale stays there.
    const QImage screen = c.view->screen()->grabWindow(c.view->winId()).toImage();
    if (!screen.isNull()) {
        const QRect legend = c.view->legendRect().translated(c.view->viewport()->pos());
        const QImage fresh = c.view->grab().toImage();
        QCOMPARE(screen.copy(legend).convertToFormat(QImage::Format_RGB32),
                 fresh.copy(legend).convertToFormat(QImage::Format_RGB32));
    }
    // A rack override: its links are dashed (overridden) in the rack level's colour, and its
    // label says the value with a "*".
    const int rack = firstAtLevel(c.doc.topology(), 1);
    LinkParams own = c.doc.topology().levels[1].link;
    own.bandwidth = 50e9;
    QVERIFY(c.doc.setGroupOverride(rack, own));
    QCoreApplication::processEvents();
    checkLinks(c);
    bool found = false;
    for (const LinkItem *l : itemsOf<LinkItem>(c.scene.get(), LinkItemType))
        if (l->group() == rack) {
            found = true;
            QVERIFY(l->isOverridden());
            QCOMPARE(l->colour(), levelColor(1));
            QCOMPARE(l->bandwidth(), 50e9);
        }
    QVERIFY(found);
    QVERIFY(c.scene->groupItem(rack)->detailText().contains(QStringLiteral("50 GB/s*")));
    QVERIFY(c.scene->groupItem(rack)->toolTip().contains(QStringLiteral("50 GB/s")));
    QVERIFY(c.view->legendLines().last().startsWith(QStringLiteral("*")));
    // The root's detail line (painted right of its switch) lies inside its item's bounds.
    const int root = c.doc.topology().root;
    GroupItem *rootItem = c.scene->groupItem(root);
    QVERIFY(rootItem);
    QVERIFY(rootItem->boundingRect().contains(rootItem->box().switchRect.topRight() + QPointF(300, 20)));
    // Undo brings both back.
    c.doc.undoStack()->undo();
    c.doc.undoStack()->undo();
    QCoreApplication::processEvents();
    checkLinks(c);
    QVERIFY(c.view->legendLines().at(1).contains(QStringLiteral("12.5 GB/s")));
}

void TestCanvasLegibility::coloursByLevel_data()
{
    QTest::addColumn<QString>("cluster");
    QTest::newRow("torus3d") << "torus3d-tpuv4-64";       // 75, 93.75, 98.44 GB/s
    QTest::newRow("spineleaf") << "paper-spineleaf-64";   // 900, 12.5, 12.5 GB/s
    QTest::newRow("superpod") << "superpod-h100-256";
}

void TestCanvasLegibility::coloursByLevel()
{
    QFETCH(QString, cluster);
    Canvas c(::cluster(cluster.toStdString()));
    const Topology &t = c.doc.topology();
    QMap<int, QColor> byLevel;
    for (const LinkItem *l : itemsOf<LinkItem>(c.scene.get(), LinkItemType)) {
        QCOMPARE(l->colour(), levelColor(l->level()));
        byLevel.insert(l->level(), l->colour());
    }
    QCOMPARE(byLevel.size(), t.levelCount() - 1);   // level 0 (inside nodes) has no link item
    QSet<QRgb> distinct;
    for (int l = 0; l < t.levelCount(); ++l)
        distinct.insert(levelColor(l).rgb());
    QCOMPARE(distinct.size(), t.levelCount());
    // The palette: the first seven levels all distinct.
    QSet<QRgb> seven;
    for (int l = 0; l < 7; ++l)
        seven.insert(levelColor(l).rgb());
    QCOMPARE(seven.size(), 7);
}

void TestCanvasLegibility::nodeHeadersDoNotOverlap_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("type");
    QTest::addColumn<double>("width");
    QTest::newRow("h100 4 devices") << "node0" << "h100-sxm-80gb" << 96.0;
    QTest::newRow("v100 2 devices") << "node0" << "v100-32gb" << 96.0;
    QTest::newRow("long name") << "gpu-node-with-a-long-name-17" << "h100-sxm-80gb" << 96.0;
    QTest::newRow("wide") << "node0" << "h100-sxm-80gb" << 170.0;
}

void TestCanvasLegibility::nodeHeadersDoNotOverlap()
{
    QFETCH(QString, name);
    QFETCH(QString, type);
    QFETCH(double, width);
    const QRectF node(0, 0, width, 47);
    const NodeHeader h = nodeHeaderLayout(node, name, type);
    QVERIFY(!h.name.isEmpty());
    const QFontMetricsF nameFm(canvasFont(10, true)), typeFm(canvasFont(9));
    QVERIFY(nameFm.horizontalAdvance(h.name) <= h.nameRect.width() + 0.01);
    QVERIFY(node.contains(h.nameRect));
    if (!h.type.isEmpty()) {
        QVERIFY(typeFm.horizontalAdvance(h.type) <= h.typeRect.width() + 0.01);
        QVERIFY(node.contains(h.typeRect));
        QVERIFY2(h.nameRect.right() < h.typeRect.left(),
                 qPrintable(QStringLiteral("%1 .. %2").arg(h.nameRect.right()).arg(h.typeRect.left())));
    }
    // Wide enough for both: both in full.
    if (nameFm.horizontalAdvance(name) + typeFm.horizontalAdvance(type) + 6 <= width - 12) {
        QCOMPARE(h.name, name);
        QCOMPARE(h.type, type);
    } else {
        QVERIFY(h.name != name || h.type != type);
    }
}

void TestCanvasLegibility::largeClustersAreBlocks()
{
    // 16384 H100: 64 SUs of 32 nodes.
    Canvas c(cluster("superpod", {{"sus", 64}}));
    const Topology &t = c.doc.topology();
    const double zoom = c.view->zoom();
    const int su = firstAtLevel(t, 1);
    const int node = t.groups[su].children.front();
    QVERIFY2(c.scene->isCollapsed(su, zoom), qPrintable(QString::number(zoom)));
    QVERIFY(c.scene->isHidden(node, zoom));
    QVERIFY(!c.scene->isCollapsed(t.root, zoom));
    QCOMPARE(c.scene->groupItem(su)->blockLines(),
             QStringList({QString::fromStdString(t.groups[su].name), QStringLiteral("256 devices"),
                          QStringLiteral("h100-sxm-80gb"), QStringLiteral("32 nodes")}));
    // The block is large enough on screen for its four lines at >= 5 px.
    const QRectF onScreen = c.view->mapFromScene(c.scene->groupRect(su)).boundingRect();
    QVERIFY2(onScreen.height() > 4 * 5 * 1.3 && onScreen.width() > 50,
             qPrintable(QStringLiteral("%1x%2").arg(onScreen.width()).arg(onScreen.height())));
    // Zoomed in, the same rack is no block and its nodes show.
    c.view->setZoom(1.0);
    QVERIFY(!c.scene->isCollapsed(su, c.view->zoom()));
    QVERIFY(!c.scene->isHidden(node, c.view->zoom()));
}

void TestCanvasLegibility::podAndSpineNamesStayInTheirHeaders()
{
    // Issue 25: on a four-tier 16,384-device cluster (8 per node, 32 nodes per rack, 8 racks
    // per pod, 8 pods) the pod and spine names were drawn over the racks' own names. Each
    // switch group's name now has a band of its own: inside its box, above every child and
    // the links into them, clear of every other group's band; and where the pods are not
    // yet blocks, high enough on screen for a name of at least 5 px.
    const Topology t = Topology::uniform("pods-16k", devicePreset("h100-sxm-80gb").value(),
                                         {{"node", 8, {450e9, 1e-6, 1}},
                                          {"rack", 32, {50e9, 2e-6, 1}},
                                          {"pod", 8, {50e9, 4e-6, 2}},
                                          {"spine", 8, {25e9, 8e-6, 4}}});
    QCOMPARE(t.deviceCount(), 16384);
    Canvas c(t, QSize(640, 560));
    const TopologyLayout &l = c.scene->topologyLayout();
    std::vector<int> switchGroups;
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].level >= 2)
            switchGroups.push_back(g);
    QCOMPARE(static_cast<int>(switchGroups.size()), 9);
    for (int g : switchGroups) {
        const TopologyLayout::Box &b = l.boxes[g];
        QVERIFY2(!b.labelBand.isEmpty(), t.groups[g].name.c_str());
        QVERIFY(b.rect.contains(b.labelBand));
        QVERIFY(!b.labelBand.intersects(b.switchRect));
        for (int child : t.groups[g].children)
            QVERIFY2(b.labelBand.bottom() < l.boxes[child].rect.top() - 12,  // the bus into the children
                     qPrintable(QStringLiteral("%1 over %2").arg(QString::fromStdString(t.groups[g].name),
                                                                 QString::fromStdString(t.groups[child].name))));
        for (int other : switchGroups)
            if (other != g)
                QVERIFY(!b.labelBand.intersects(l.boxes[other].labelBand));
    }
    // Zoomed in until the pods open into racks: the pods' bands hold a name of >= 5 px.
    const int pod = firstAtLevel(t, 2);
    double zoom = c.view->zoom();
    while (c.scene->isCollapsed(pod, zoom) && zoom < 1)
        zoom *= 1.25;
    c.view->setZoom(zoom);
    QVERIFY(!c.scene->isCollapsed(pod, c.view->zoom()));
    const double onScreen = l.boxes[pod].labelBand.height() * c.view->zoom();
    QVERIFY2(onScreen >= 5, qPrintable(QStringLiteral("%1 px at zoom %2").arg(onScreen).arg(c.view->zoom())));
}

void TestCanvasLegibility::wideTreesFillTheView_data()
{
    QTest::addColumn<QString>("cluster");
    QTest::addColumn<int>("sus");
    QTest::addColumn<double>("minGain");
    // Four SUs were four tall columns: 1.70x measured. 64 SUs were already wrapped into rows
    // of whole SUs; node columns inside the SUs give 1.14x.
    QTest::newRow("superpod-1024") << "superpod" << 4 << 1.5;
    QTest::newRow("superpod-16384") << "superpod" << 64 << 1.1;
}

void TestCanvasLegibility::wideTreesFillTheView()
{
    QFETCH(QString, cluster);
    QFETCH(int, sus);
    QFETCH(double, minGain);
    const Topology t = ::cluster(cluster.toStdString(), {{"sus", sus}});
    const double aspect = 1000.0 / 700.0;
    auto fitZoom = [aspect](const QRectF &b) { return std::min(aspect / b.width(), 1.0 / b.height()); };
    const TopologyLayout plain = computeLayout(t, 0);
    const TopologyLayout shaped = computeLayout(t, aspect);
    const double gain = fitZoom(shaped.bounds) / fitZoom(plain.bounds);
    qDebug("%s sus=%d: columns %d, per row %d, zoom gain %.2f", qPrintable(cluster), sus, shaped.rackColumns,
           shaped.rootPerRow, gain);
    QVERIFY2(gain > minGain, qPrintable(QString::number(gain)));
    // The diagram's aspect is within a factor 1.6 of the view's.
    const double a = shaped.bounds.width() / shaped.bounds.height();
    QVERIFY2(a > aspect / 1.6 && a < aspect * 1.6, qPrintable(QString::number(a)));
    // Every node still inside its rack, every rack inside its parent.
    for (int g = 0; g < static_cast<int>(t.groups.size()); ++g)
        if (t.groups[g].parent >= 0)
            QVERIFY(shaped.boxes[t.groups[g].parent].rect.contains(shaped.boxes[g].rect));
}

void TestCanvasLegibility::multiSelectionDragMovesAll()
{
    Result<Workspace> w = loadWorkspace(kQuickstart.toStdString());
    QVERIFY(w.ok());
    Canvas c(w->cluster);
    const Topology &t = c.doc.topology();
    const int rack1 = groupNamed(t, "rack1");
    const int n0 = groupNamed(t, "node0"), n1 = groupNamed(t, "node1");
    c.doc.setSelection({c.doc.uidOf(n0), c.doc.uidOf(n1)});
    QCoreApplication::processEvents();
    const int undoBefore = c.doc.undoStack()->count();
    const QPointF from = c.scene->groupRect(n0).topLeft() + QPointF(10, 6);
    const QPointF to = c.scene->dropPoint(rack1);
    QWidget *vp = c.view->viewport();
    const QPoint a = c.view->mapFromScene(from), b = c.view->mapFromScene(to);
    QTest::mousePress(vp, Qt::LeftButton, Qt::NoModifier, a);
    for (int i = 1; i <= 8; ++i)
        QTest::mouseMove(vp, a + (b - a) * i / 8);
    QTest::mouseRelease(vp, Qt::LeftButton, Qt::NoModifier, b);
    QCoreApplication::processEvents();
    const Topology &after = c.doc.topology();
    QCOMPARE(after.groups[after.groups[groupNamed(after, "node0")].parent].name, std::string("rack1"));
    QCOMPARE(after.groups[after.groups[groupNamed(after, "node1")].parent].name, std::string("rack1"));
    QCOMPARE(after.groups[after.groups[groupNamed(after, "node2")].parent].name, std::string("rack0"));
    QCOMPARE(c.doc.undoStack()->count(), undoBefore + 1);
    c.doc.undoStack()->undo();
    const Topology &undone = c.doc.topology();
    QCOMPARE(undone.groups[undone.groups[groupNamed(undone, "node0")].parent].name, std::string("rack0"));
    QCOMPARE(undone.groups[undone.groups[groupNamed(undone, "node1")].parent].name, std::string("rack0"));
    // moveNodes refuses as a whole: moving every node out of rack0 would leave it empty.
    const Topology &now = c.doc.topology();
    QVERIFY(!c.doc.moveNodes({groupNamed(now, "node0"), groupNamed(now, "node1"), groupNamed(now, "node2")},
                             groupNamed(now, "rack1")));
    QCOMPARE(c.doc.undoStack()->count(), undoBefore + 1);
    QCOMPARE(c.doc.topology(), undone);
}

void TestCanvasLegibility::contextMenus()
{
    Result<Workspace> w = loadWorkspace(kQuickstart.toStdString());
    QVERIFY(w.ok());
    Canvas c(w->cluster);
    const Topology &t = c.doc.topology();
    const int node0 = groupNamed(t, "node0"), rack0 = groupNamed(t, "rack0");
    // Node: Duplicate, Delete, Move to rack > rack1.
    auto menu = c.view->contextMenuAt(c.scene->groupRect(node0).topLeft() + QPointF(10, 6));
    QCOMPARE(actionTexts(menu.get()), QStringList({"Duplicate", "Delete", "Move to rack"}));
    QMenu *move = menu->findChild<QMenu *>(QStringLiteral("moveToRack"));
    QVERIFY(move);
    QCOMPARE(actionTexts(move), QStringList({"rack1"}));
    actionNamed(move, "rack1")->trigger();
    {
        const Topology &a = c.doc.topology();
        QCOMPARE(a.groups[a.groups[groupNamed(a, "node0")].parent].name, std::string("rack1"));
    }
    c.doc.undoStack()->undo();
    // Rack: Add Node, Duplicate, Delete.
    menu = c.view->contextMenuAt(c.scene->groupRect(rack0).topLeft() + QPointF(6, 30));
    QCOMPARE(actionTexts(menu.get()), QStringList({"Add Node", "Duplicate", "Delete"}));
    const int nodesBefore = static_cast<int>(c.doc.topology().groups[rack0].children.size());
    actionNamed(menu.get(), "Add Node")->trigger();
    QCOMPARE(static_cast<int>(c.doc.topology().groups[groupNamed(c.doc.topology(), "rack0")].children.size()),
             nodesBefore + 1);
    // Empty canvas: Add Rack, Fit.
    const QRectF d = c.scene->diagramRect();
    menu = c.view->contextMenuAt(d.bottomRight() + QPointF(200, 200));
    QCOMPARE(actionTexts(menu.get()), QStringList({"Add Rack", "Fit"}));
    c.view->setZoom(3);
    actionNamed(menu.get(), "Fit")->trigger();
    QVERIFY(c.view->zoom() < 3);
}

QTEST_MAIN(TestCanvasLegibility)
#include "test_canvas_legibility.moc"
