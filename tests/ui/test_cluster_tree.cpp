// The cluster tree (ClusterTreeModel + ClusterTreeView) through edit sequences: after every
// edit, undo and redo the whole model is compared with a tree built independently from
// WorkspaceDocument::topology(), the rows the view lays out are compared with the model's
// expanded rows (no ghost or missing rows), the selection shown with the document's, while
// QAbstractItemModelTester checks every signal the model emits. Then the row context menu.
// Hand numbers (sample_configs/workspaces/quickstart.nestws.json): spine0 -> rack0 (node0..2,
// 8 H100 each) and rack1 (node3..6, 8 A100 each): 56 devices, rack0 24, rack1 32.
#include "WorkspaceDocument.h"
#include "ClusterTreeModel.h"
#include "ClusterTreeView.h"
#include "Workspace.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QLineEdit>
#include <QMenu>
#include <QSignalSpy>
#include <QUndoStack>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

// One row as the tree must show it.
struct Row {
    QString name;
    int devices = 0;
    std::vector<Row> children;
};

// From the topology alone: names, child order, and devices summed over the nodes below.
Row expectedRow(const Topology &t, int g)
{
    Row r;
    r.name = QString::fromStdString(t.groups[g].name);
    if (t.groups[g].level == 0)
        r.devices = static_cast<int>(t.groups[g].devices.size());
    for (int c : t.groups[g].children) {
        r.children.push_back(expectedRow(t, c));
        r.devices += r.children.back().devices;
    }
    return r;
}

// The device count a row shows: "8 × h100-sxm-80gb" for a node, a number above.
int shownDevices(const QModelIndex &row)
{
    const QString text = row.siblingAtColumn(ClusterTreeModel::DevicesColumn).data().toString();
    bool ok = false;
    const int n = text.section(QLatin1Char(' '), 0, 0).toInt(&ok);
    return ok ? n : -1;
}

// Empty when the model's subtree at `index` equals `expected`, else where it differs.
QString compareRow(const QAbstractItemModel *m, const QModelIndex &index, const Row &expected,
                   const QString &path)
{
    const QString here = path + QLatin1Char('/') + expected.name;
    if (index.data().toString() != expected.name)
        return here + QStringLiteral(": name '%1'").arg(index.data().toString());
    if (shownDevices(index) != expected.devices)
        return here + QStringLiteral(": %1 devices shown, %2 expected").arg(shownDevices(index)).arg(expected.devices);
    const int rows = m->rowCount(index);
    if (rows != static_cast<int>(expected.children.size()))
        return here + QStringLiteral(": %1 rows, %2 expected").arg(rows).arg(expected.children.size());
    for (int r = 0; r < rows; ++r) {
        QString diff = compareRow(m, m->index(r, 0, index), expected.children[r], here);
        if (!diff.isEmpty())
            return diff;
    }
    return {};
}

// The rows a tree view should lay out: pre-order, children only under expanded rows.
void expectedVisible(const QTreeView &view, const QModelIndex &index, QStringList &out)
{
    out << index.data().toString();
    if (!view.isExpanded(index))
        return;
    for (int r = 0; r < view.model()->rowCount(index); ++r)
        expectedVisible(view, view.model()->index(r, 0, index), out);
}

// The rows the view has laid out, top to bottom.
QStringList laidOut(const QTreeView &view)
{
    QStringList out;
    for (QModelIndex i = view.model()->index(0, 0); i.isValid(); i = view.indexBelow(i))
        out << i.data().toString();
    return out;
}

QStringList names(const Topology &t, const QList<int> &groups)
{
    QStringList out;
    for (int g : groups)
        out << QString::fromStdString(t.groups[g].name);
    out.sort();
    return out;
}

} // namespace

class TestClusterTree : public QObject {
    Q_OBJECT
private:
    WorkspaceDocument *m_doc = nullptr;
    ClusterTreeView *m_view = nullptr;

    // The whole tree against the topology, the laid-out rows against the model, the
    // selection against the document; `step` names the edit in failure messages.
    void checkTree(const char *step)
    {
        const Topology &t = m_doc->topology();
        const ClusterTreeModel *m = m_view->clusterModel();
        QCOMPARE(m->rowCount(), 1);
        const QString diff = compareRow(m, m->index(0, 0), expectedRow(t, t.root), QString());
        QVERIFY2(diff.isEmpty(), qPrintable(QStringLiteral("%1: %2").arg(step, diff)));
        QStringList visible;
        expectedVisible(*m_view, m->index(0, 0), visible);
        QCOMPARE(laidOut(*m_view), visible);
        QStringList shown;
        for (const QModelIndex &i : m_view->selectionModel()->selectedRows()) {
            QVERIFY2(i.isValid() && m->groupAt(i) >= 0, step);
            shown << i.data().toString();
        }
        shown.sort();
        QCOMPARE(shown, names(t, m_doc->selectedGroups()));
    }

    int group(const char *name) const { return groupNamed(m_doc->topology(), name); }
    bool expanded(const char *name) const
    {
        return m_view->isExpanded(m_view->clusterModel()->indexOfGroup(group(name)));
    }

private slots:
    void init()
    {
        auto ws = loadWorkspace(kQuickstart.toStdString());
        QVERIFY2(ws.ok(), ws.ok() ? "" : ws.error().c_str());
        m_doc = new WorkspaceDocument(this);
        m_doc->load(std::move(ws).value(), kQuickstart, WorkspaceDocument::FileKind::Workspace);
        m_view = new ClusterTreeView(m_doc);
        m_view->resize(500, 700);
        m_view->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_view));
    }

    void cleanup()
    {
        delete m_view;
        delete m_doc;
        m_view = nullptr;
        m_doc = nullptr;
    }

    void treeFollowsEveryEditUndoAndRedo()
    {
        ClusterTreeModel *model = m_view->clusterModel();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QUndoStack *undo = m_doc->undoStack();
        checkTree("loaded");
        QCOMPARE(shownDevices(model->index(0, 0)), 56);   // hand count: 3x8 + 4x8

        // One node, selected first (the row must not stay highlighted once it is gone).
        m_doc->setSelection({m_doc->uidOf(group("node1"))});
        QCOMPARE(m_view->selectionModel()->selectedRows().size(), 1);
        QVERIFY(m_doc->removeGroups({group("node1")}));
        checkTree("delete node1");
        QCOMPARE(shownDevices(model->index(0, 0)), 48);
        QVERIFY(m_view->selectionModel()->selectedRows().isEmpty());

        // Several, across racks, with another row selected that survives.
        m_doc->setSelection({m_doc->uidOf(group("node5"))});
        QVERIFY(m_doc->removeGroups({group("node0"), group("node4")}));
        checkTree("delete node0 and node4");
        QCOMPARE(shownDevices(model->index(0, 0)), 32);
        QCOMPARE(m_view->selectionModel()->selectedRows().size(), 1);
        QCOMPARE(m_view->selectionModel()->selectedRows()[0].data().toString(), QStringLiteral("node5"));

        undo->undo();
        checkTree("undo delete of two");
        QCOMPARE(shownDevices(model->index(0, 0)), 48);
        undo->redo();
        checkTree("redo delete of two");
        undo->undo();
        undo->undo();
        checkTree("undo both deletes");
        QCOMPARE(shownDevices(model->index(0, 0)), 56);

        // Expansion survives a structural edit: collapse rack1, then edit rack0.
        m_view->collapse(model->indexOfGroup(group("rack1")));
        QVERIFY(m_doc->addNode(group("node0")));   // after node0, shaped like rack0's last node
        checkTree("add node");
        QCOMPARE(shownDevices(model->index(0, 0)), 64);
        QVERIFY(!expanded("rack1"));
        QVERIFY(expanded("rack0"));
        QCOMPARE(model->rowCount(model->indexOfGroup(group("rack0"))), 4);
        QCOMPARE(model->index(1, 0, model->indexOfGroup(group("rack0"))).data().toString(),
                 QString::fromStdString(m_doc->topology().groups[m_doc->topology().groups[group("rack0")].children[1]].name));
        m_view->expand(model->indexOfGroup(group("rack1")));

        QVERIFY(m_doc->addRack(-1));
        checkTree("add rack");
        QCOMPARE(model->rowCount(model->index(0, 0)), 3);
        // The new rack opens so its nodes show.
        QVERIFY(m_view->isExpanded(model->index(2, 0, model->index(0, 0))));

        QVERIFY(m_doc->duplicateGroup(group("rack1")));
        checkTree("duplicate rack1");
        QCOMPARE(model->rowCount(model->index(0, 0)), 4);

        QVERIFY(m_doc->moveNode(group("node0"), group("rack1"), 0));
        checkTree("move node0 to rack1");
        QCOMPARE(model->index(0, 0, model->indexOfGroup(group("rack1"))).data().toString(), QStringLiteral("node0"));

        // A property edit: the node's row and the counts of every ancestor change, and the
        // model says so (a view repaints only what dataChanged names).
        const int before = shownDevices(model->indexOfGroup(group("rack1")));
        const int spineBefore = shownDevices(model->index(0, 0));
        const Topology &t = m_doc->topology();
        const DeviceSpec a100 = t.deviceTypes[t.groups[group("node3")].deviceType];
        QSignalSpy changed(model, &QAbstractItemModel::dataChanged);
        QVERIFY(m_doc->setNodeDevices(group("node3"), 4, a100));
        checkTree("set node3 devices");
        QCOMPARE(shownDevices(model->indexOfGroup(group("rack1"))), before - 4);
        QCOMPARE(shownDevices(model->index(0, 0)), spineBefore - 4);
        QSet<QString> told;
        for (const QList<QVariant> &args : changed) {
            const QModelIndex from = args[0].toModelIndex(), to = args[1].toModelIndex();
            QCOMPARE(from.parent(), to.parent());
            if (from.column() <= ClusterTreeModel::DevicesColumn && to.column() >= ClusterTreeModel::DevicesColumn)
                for (int r = from.row(); r <= to.row(); ++r)
                    told << model->index(r, 0, from.parent()).data().toString();
        }
        QVERIFY(told.contains(QStringLiteral("node3")));
        QVERIFY(told.contains(QStringLiteral("rack1")));
        QVERIFY(told.contains(QStringLiteral("spine0")));

        // Everything back, then forward again, checking at each step.
        const int steps = undo->index();
        while (undo->canUndo()) {
            undo->undo();
            checkTree(qPrintable(QStringLiteral("undo to %1").arg(undo->index())));
        }
        QCOMPARE(shownDevices(model->index(0, 0)), 56);
        while (undo->canRedo()) {
            undo->redo();
            checkTree(qPrintable(QStringLiteral("redo to %1").arg(undo->index())));
        }
        QCOMPARE(undo->index(), steps);
    }

    void currentRowAndScrollSurviveAnEdit()
    {
        // A tree taller than the view (6 racks, 23 nodes), scrolled so node5 is the top row.
        for (int i = 0; i < 4; ++i)
            QVERIFY(m_doc->duplicateGroup(group("rack1")));
        m_view->resize(500, 160);
        const QModelIndex target = m_view->clusterModel()->indexOfGroup(group("node5"));
        m_view->setCurrentIndex(target);
        m_view->scrollTo(target, QAbstractItemView::PositionAtTop);
        QCOMPARE(m_view->indexAt(QPoint(1, 1)).data().toString(), QStringLiteral("node5"));
        QVERIFY(m_doc->removeGroups({group("node0")}));   // above the visible rows
        checkTree("delete above");
        QCOMPARE(m_view->currentIndex().data().toString(), QStringLiteral("node5"));
        QCOMPARE(m_view->indexAt(QPoint(1, 1)).data().toString(), QStringLiteral("node5"));
    }

    void contextMenuActionsFitTheRow_data()
    {
        QTest::addColumn<QString>("row");
        QTest::addColumn<bool>("addRack");
        QTest::addColumn<bool>("addNode");
        QTest::addColumn<bool>("duplicate");
        QTest::addColumn<bool>("remove");
        QTest::addColumn<bool>("rename");
        // The cluster itself cannot be duplicated or deleted (ClusterEdits refuses both).
        QTest::newRow("root") << "spine0" << true << true << false << false << true;
        QTest::newRow("rack") << "rack0" << true << true << true << true << true;
        QTest::newRow("node") << "node4" << true << true << true << true << true;
        QTest::newRow("empty area") << "" << true << true << false << false << false;
    }

    void contextMenuActionsFitTheRow()
    {
        QFETCH(QString, row);
        QFETCH(bool, addRack);
        QFETCH(bool, addNode);
        QFETCH(bool, duplicate);
        QFETCH(bool, remove);
        QFETCH(bool, rename);
        const int g = row.isEmpty() ? -1 : group(row.toUtf8().constData());
        const std::unique_ptr<QMenu> menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(g));
        QVERIFY(menu);
        const std::pair<const char *, bool> actions[] = {
            {"addRack", addRack}, {"addNode", addNode}, {"duplicate", duplicate},
            {"delete", remove}, {"rename", rename}};
        for (const auto &[name, enabled] : actions) {
            const QAction *a = menu->findChild<QAction *>(QLatin1String(name));
            QVERIFY2(a, name);
            QVERIFY2(a->isEnabled() == enabled, name);
            if (!enabled)
                QVERIFY2(!a->toolTip().isEmpty(), name);   // says why
        }
    }

    void contextMenuActsThroughTheDocument()
    {
        QAbstractItemModelTester tester(m_view->clusterModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        // Delete on a node: one undo step, the tree follows.
        std::unique_ptr<QMenu> menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(group("node4")));
        menu->findChild<QAction *>(QStringLiteral("delete"))->trigger();
        QCOMPARE(m_doc->topology().deviceCount(), 48);
        QCOMPARE(group("node4"), -1);
        QCOMPARE(m_doc->undoStack()->count(), 1);
        checkTree("menu delete");
        // Delete on a row of a multi-selection deletes the selection.
        m_doc->setSelection({m_doc->uidOf(group("node0")), m_doc->uidOf(group("node5"))});
        menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(group("node5")));
        QAction *remove = menu->findChild<QAction *>(QStringLiteral("delete"));
        QVERIFY(remove->text().contains(QLatin1String("2")));
        remove->trigger();
        QCOMPARE(m_doc->topology().deviceCount(), 32);
        checkTree("menu delete two");
        // Add Rack on a rack, Add Node on a node, Duplicate on a rack.
        menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(group("rack0")));
        menu->findChild<QAction *>(QStringLiteral("addRack"))->trigger();
        QCOMPARE(m_doc->topology().groups[m_doc->topology().root].children.size(), size_t(3));
        menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(group("node1")));
        menu->findChild<QAction *>(QStringLiteral("addNode"))->trigger();
        QCOMPARE(m_doc->topology().groups[group("rack0")].children.size(), size_t(3));
        menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(group("rack1")));
        menu->findChild<QAction *>(QStringLiteral("duplicate"))->trigger();
        QCOMPARE(m_doc->topology().groups[m_doc->topology().root].children.size(), size_t(4));
        checkTree("menu adds");
        QCOMPARE(m_doc->undoStack()->count(), 5);
        // Rename opens the name editor on the row.
        menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(group("rack1"), ClusterTreeModel::DevicesColumn));
        menu->findChild<QAction *>(QStringLiteral("rename"))->trigger();
        auto *editor = qobject_cast<QLineEdit *>(m_view->indexWidget(m_view->clusterModel()->indexOfGroup(group("rack1"))));
        QVERIFY(editor);
        QCOMPARE(editor->text(), QStringLiteral("rack1"));
    }

    void deleteOfTheOnlyNodeIsDisabled()
    {
        // A rack with one node: deleting the node would leave the rack empty (refused).
        while (m_doc->topology().groups[group("rack0")].children.size() > 1)
            QVERIFY(m_doc->removeGroups({m_doc->topology().groups[group("rack0")].children.back()}));
        const int only = m_doc->topology().groups[group("rack0")].children[0];
        const std::unique_ptr<QMenu> menu = m_view->createContextMenu(m_view->clusterModel()->indexOfGroup(only));
        const QAction *remove = menu->findChild<QAction *>(QStringLiteral("delete"));
        QVERIFY(!remove->isEnabled());
        QVERIFY(remove->toolTip().contains(QLatin1String("rack0")));
        checkTree("rack of one node");
    }
};

QTEST_MAIN(TestClusterTree)
#include "test_cluster_tree.moc"
