// The cluster document and its views: undo commands, tree model (QAbstractItemModelTester),
// property editor, templates. Expected counts are hand-computed from the sample file
// sample_configs/workspaces/quickstart.nestws.json: spine0 -> rack0 (node0..2, 8 H100 each)
// and rack1 (node3..6, 8 A100 each, link override 25 GB/s); levels node 450 GB/s, rack
// 50 GB/s, spine 25 GB/s 2:1.
#include "SourceDir.h"
#include "WorkspaceDocument.h"
#include "ClusterTreeModel.h"
#include "ClusterTreeView.h"
#include "MainWindow.h"
#include "ModelPanel.h"
#include "LayerTableModel.h"
#include "PropertyEditor.h"
#include "TemplateDialog.h"

#include "ClusterTemplates.h"
#include "ModelIO.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QFile>
#include <QLabel>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QTableView>
#include <QtTest>

#include <set>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

int nodeCount(const Topology &t)
{
    int n = 0;
    for (const TopoGroup &g : t.groups)
        n += g.level == 0 ? 1 : 0;
    return n;
}

} // namespace

class TestClusterEditor : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> makeWindow()
    {
        auto w = std::make_unique<MainWindow>(nullptr, std::make_unique<Settings>(m_dir.filePath("settings.ini")));
        QString error;
        if (!w->openFile(kQuickstart, &error))
            qFatal("cannot open the quickstart sample: %s", qPrintable(error));
        return w;
    }

private slots:
    void loadHasNoUndoEntry()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        QCOMPARE(doc->topology().deviceCount(), 56);
        QCOMPARE(doc->undoStack()->count(), 0);
        QVERIFY(!doc->isModified());
        QCOMPARE(doc->fileKind(), WorkspaceDocument::FileKind::Workspace);
    }

    void moveUndoRedo()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        const Topology before = doc->topology();
        const int node0 = groupNamed(before, "node0"), rack1 = groupNamed(before, "rack1");
        QVERIFY(doc->moveNode(node0, rack1));
        const Topology &t = doc->topology();
        QCOMPARE(t.groups[groupNamed(t, "rack0")].children.size(), size_t(2));
        QCOMPARE(t.groups[groupNamed(t, "rack1")].children.size(), size_t(5));
        QCOMPARE(t.groups[groupNamed(t, "node0")].parent, groupNamed(t, "rack1"));
        QCOMPARE(t.deviceCount(), 56);
        QVERIFY(t.validate().empty());
        QVERIFY(doc->isModified());
        const Topology after = t;
        doc->undoStack()->undo();
        QVERIFY(doc->topology() == before);
        QVERIFY(!doc->isModified());
        doc->undoStack()->redo();
        QVERIFY(doc->topology() == after);
    }

    void refusedEditsChangeNothing()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        const Topology before = doc->topology();
        QSignalSpy refused(doc, &WorkspaceDocument::editRefused);
        const Topology &t = doc->topology();
        // Removing every node of rack0 would leave it empty.
        QVERIFY(!doc->removeGroups({groupNamed(t, "node0"), groupNamed(t, "node1"), groupNamed(t, "node2")}));
        // The root cannot go.
        QVERIFY(!doc->removeGroups({t.root}));
        // A node is not a rack; a rack is not a node.
        QVERIFY(!doc->moveNode(groupNamed(t, "node0"), groupNamed(t, "node3")));
        QVERIFY(!doc->moveNode(groupNamed(t, "rack0"), groupNamed(t, "rack1")));
        // Its own rack.
        QVERIFY(!doc->moveNode(groupNamed(t, "node0"), groupNamed(t, "rack0")));
        // Bandwidth must be positive; a node needs a device.
        QVERIFY(!doc->setLevelLink(1, LinkParams{0, 1e-6, 1}));
        QVERIFY(!doc->setNodeDevices(groupNamed(t, "node0"), 0, t.deviceTypes[0]));
        QCOMPARE(refused.count(), 7);
        QVERIFY(doc->topology() == before);
        QCOMPARE(doc->undoStack()->count(), 0);
        for (const auto &args : refused)
            QVERIFY(!args.at(0).toString().isEmpty());
    }

    void addRemoveDuplicate()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        const Topology before = doc->topology();
        // Add a rack next to rack1: shaped like spine0's first rack (rack0: 3 x 8 H100).
        QVERIFY(doc->addRack(groupNamed(before, "rack1")));
        QCOMPARE(doc->topology().deviceCount(), 56 + 24);
        QCOMPARE(doc->topology().groups[doc->topology().root].children.size(), size_t(3));
        // Add a node after node3: shaped like rack1's last node (8 A100).
        QVERIFY(doc->addNode(groupNamed(doc->topology(), "node3")));
        QCOMPARE(doc->topology().deviceCount(), 80 + 8);
        // Duplicate rack1 (now 5 nodes x 8) -> +40.
        QVERIFY(doc->duplicateGroup(groupNamed(doc->topology(), "rack1")));
        QCOMPARE(doc->topology().deviceCount(), 88 + 40);
        // Names stay unique.
        std::set<std::string> names;
        for (const TopoGroup &g : doc->topology().groups)
            QVERIFY2(names.insert(g.name).second, g.name.c_str());
        // Delete rack0 (24 devices).
        QVERIFY(doc->removeGroups({groupNamed(doc->topology(), "rack0")}));
        QCOMPARE(doc->topology().deviceCount(), 128 - 24);
        QVERIFY(doc->topology().validate().empty());
        // Undo everything: exactly the loaded cluster again.
        QCOMPARE(doc->undoStack()->count(), 4);
        while (doc->undoStack()->canUndo())
            doc->undoStack()->undo();
        QVERIFY(doc->topology() == before);
        // Redo everything.
        while (doc->undoStack()->canRedo())
            doc->undoStack()->redo();
        QCOMPARE(doc->topology().deviceCount(), 104);
    }

    void addRackRefusedWithoutLevelAboveRacks()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        auto small = makeCluster("paper-v100", {{"devices", 8}});
        QVERIFY2(small.ok(), small.error().c_str());
        if (small->levelCount() != 2)
            QSKIP("paper-v100 is not a two-level cluster here");
        w->newDocument(*small);
        QSignalSpy refused(doc, &WorkspaceDocument::editRefused);
        QVERIFY(!doc->addRack(-1));
        QCOMPARE(refused.count(), 1);
    }

    void treeModelFollowsEdits()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        ClusterTreeModel *model = w->treeView()->clusterModel();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model->rowCount(), 1);
        const QModelIndex root = model->index(0, 0);
        QCOMPARE(model->data(root).toString(), QStringLiteral("spine0"));
        QCOMPARE(model->rowCount(root), 2);
        const QModelIndex rack1 = model->index(1, 0, root);
        QCOMPARE(model->data(rack1).toString(), QStringLiteral("rack1"));
        QCOMPARE(model->rowCount(rack1), 4);
        QCOMPARE(model->data(rack1.siblingAtColumn(ClusterTreeModel::DevicesColumn)).toInt(), 32);
        QVERIFY(model->data(rack1.siblingAtColumn(ClusterTreeModel::BandwidthColumn)).toString().startsWith("25 GB/s"));
        // A structural edit resets the model (ClusterTreeView keeps its state by uid); the
        // group's row is found again by uid (test_cluster_tree checks whole sequences).
        const GroupUid node0Uid = doc->uidOf(groupNamed(doc->topology(), "node0"));
        const auto node0Row = [&] { return model->indexOfGroup(doc->groupOf(node0Uid)); };
        QCOMPARE(node0Row(), model->index(0, 0, model->index(0, 0, root)));
        QVERIFY(doc->moveNode(groupNamed(doc->topology(), "node0"), groupNamed(doc->topology(), "rack1")));
        QCOMPARE(node0Row().data().toString(), QStringLiteral("node0"));
        QCOMPARE(node0Row().parent().data().toString(), QStringLiteral("rack1"));
        QCOMPARE(model->rowCount(model->index(0, 0, root)), 2);
        QCOMPARE(model->rowCount(model->index(1, 0, root)), 5);
        QVERIFY(doc->addRack(-1));
        QVERIFY(doc->duplicateGroup(groupNamed(doc->topology(), "node3")));
        QVERIFY(doc->removeGroups({groupNamed(doc->topology(), "rack0")}));
        QCOMPARE(model->rowCount(model->index(0, 0)), 2);
        while (doc->undoStack()->canUndo())
            doc->undoStack()->undo();
        QCOMPARE(model->rowCount(model->index(0, 0)), 2);
        QCOMPARE(node0Row().parent().data().toString(), QStringLiteral("rack0"));
        // Renaming through the model is an undoable command.
        QVERIFY(model->setData(node0Row(), QStringLiteral("gpu-box")));
        QCOMPARE(doc->topology().groups[groupNamed(doc->topology(), "gpu-box")].level, 0);
        doc->undoStack()->undo();
        QVERIFY(groupNamed(doc->topology(), "node0") >= 0);
    }

    void selectionSyncedTreeAndDocument()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        ClusterTreeView *tree = w->treeView();
        const int node4 = groupNamed(doc->topology(), "node4");
        doc->setSelection({doc->uidOf(node4)});
        const QModelIndexList rows = tree->selectionModel()->selectedRows();
        QCOMPARE(rows.size(), 1);
        QCOMPARE(rows[0].data().toString(), QStringLiteral("node4"));
        // And back: selecting a row in the tree selects the group in the document.
        const QModelIndex rack0 = tree->clusterModel()->indexOfGroup(groupNamed(doc->topology(), "rack0"));
        tree->selectionModel()->select(rack0, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        QCOMPARE(doc->selectedGroups(), QList<int>{groupNamed(doc->topology(), "rack0")});
        QCOMPARE(w->propertyEditor()->currentGroup(), groupNamed(doc->topology(), "rack0"));
    }

    void propertyEditorEditsLevelLink()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        auto *spin = w->propertyEditor()->findChild<QDoubleSpinBox *>(QStringLiteral("levelBandwidth1"));
        QVERIFY(spin);
        QCOMPARE(spin->value(), 50.0);  // rack level, GB/s
        spin->setValue(100.0);
        QCOMPARE(doc->topology().levels[1].link.bandwidth, 100e9);
        spin->setValue(120.0);  // merges with the previous step
        QCOMPARE(doc->topology().levels[1].link.bandwidth, 120e9);
        QCOMPARE(doc->undoStack()->count(), 1);
        doc->undoStack()->undo();
        QCOMPARE(doc->topology().levels[1].link.bandwidth, 50e9);
        QCOMPARE(spin->value(), 50.0);  // the form follows the document
        auto *over = w->propertyEditor()->findChild<QDoubleSpinBox *>(QStringLiteral("levelOversubscription2"));
        QVERIFY(over);
        over->setValue(4.0);
        QCOMPARE(doc->topology().levels[2].link.oversubscription, 4.0);
    }

    void propertyEditorEditsNode()
    {
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        const int node0 = groupNamed(doc->topology(), "node0");
        doc->setSelection({doc->uidOf(node0)});
        auto *count = w->propertyEditor()->findChild<QSpinBox *>(QStringLiteral("deviceCount"));
        auto *type = w->propertyEditor()->findChild<QComboBox *>(QStringLiteral("deviceType"));
        QVERIFY(count && type);
        QCOMPARE(count->value(), 8);
        count->setValue(4);
        QCOMPARE(doc->topology().deviceCount(), 56 - 4);
        QCOMPARE(doc->topology().groups[node0].devices.size(), size_t(4));
        // Device type: the A100 of rack1 (already in the cluster).
        const int a100 = type->findText(QStringLiteral("a100-80gb"));
        QVERIFY(a100 >= 0);
        type->setCurrentIndex(a100);
        const Topology &t = doc->topology();
        QCOMPARE(t.deviceTypes[t.groups[groupNamed(t, "node0")].deviceType].name, std::string("a100-80gb"));
        while (doc->undoStack()->canUndo())
            doc->undoStack()->undo();
        QCOMPARE(doc->topology().deviceCount(), 56);
        const Topology &u = doc->topology();
        QCOMPARE(u.deviceTypes[u.groups[groupNamed(u, "node0")].deviceType].name, std::string("h100-sxm-80gb"));
        // Rack override: rack1 has one (25 GB/s); switching it off falls back to the level's 50.
        doc->setSelection({doc->uidOf(groupNamed(u, "rack1"))});
        auto *overrideBox = w->propertyEditor()->findChild<QCheckBox *>(QStringLiteral("overrideLink"));
        QVERIFY(overrideBox && overrideBox->isChecked());
        overrideBox->setChecked(false);
        QCOMPARE(doc->topology().link(groupNamed(doc->topology(), "rack1")).bandwidth, 50e9);
        doc->undoStack()->undo();
        QCOMPARE(doc->topology().link(groupNamed(doc->topology(), "rack1")).bandwidth, 25e9);
    }

    void templatesProduceTheRightCounts_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QVariantMap>("params");
        QTest::addColumn<int>("devices");
        QTest::addColumn<int>("nodes");
        QTest::addColumn<int>("racks");
        QTest::newRow("fat-tree 4x3x5")
            << "fat-tree" << QVariantMap{{"devices_per_node", 4}, {"nodes_per_rack", 3}, {"racks", 5}}
            << 4 * 3 * 5 << 3 * 5 << 5;
        QTest::newRow("spine-leaf 8x2x3")
            << "spine-leaf" << QVariantMap{{"devices_per_node", 8}, {"nodes_per_leaf", 2}, {"leaves", 3}}
            << 8 * 2 * 3 << 2 * 3 << 3;
    }

    void templatesProduceTheRightCounts()
    {
        QFETCH(QString, key);
        QFETCH(QVariantMap, params);
        QFETCH(int, devices);
        QFETCH(int, nodes);
        QFETCH(int, racks);
        TemplateDialog dialog;
        dialog.setTemplate(key);
        QCOMPARE(QString::fromStdString(dialog.templateKey()), key);
        for (auto it = params.begin(); it != params.end(); ++it)
            QVERIFY2(dialog.setParam(it.key(), it.value().toDouble()), qPrintable(it.key()));
        const Result<Topology> t = dialog.cluster();
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), devices);
        QCOMPARE(nodeCount(*t), nodes);
        int level1 = 0;
        for (const TopoGroup &g : t->groups)
            level1 += g.level == 1 ? 1 : 0;
        QCOMPARE(level1, racks);
        // Into a window: the document and the status bar counts follow.
        auto w = makeWindow();
        w->newDocument(*t);
        QCOMPARE(w->document()->topology().deviceCount(), devices);
        QVERIFY(w->document()->isModified());
    }

    void modelPanelShowsCoreProfile()
    {
        auto w = makeWindow();
        ModelPanel *panel = w->modelPanel();
        QVERIFY2(panel->problem().isEmpty(), qPrintable(panel->problem()));
        // llama2-7b: 32 transformer blocks + embedding + head = 34 rows (ModelBuilder's chain).
        QCOMPARE(panel->layerModel()->rowCount(), 34);
        auto *layers = panel->findChild<QSpinBox *>(QStringLiteral("layers"));
        QVERIFY(layers);
        QCOMPARE(layers->value(), 32);
        layers->setValue(16);
        QCOMPARE(panel->layerModel()->rowCount(), 18);
        QCOMPARE(w->document()->model().toJson().at("layers").get<int>(), 16);
        w->document()->undoStack()->undo();
        QCOMPARE(panel->layerModel()->rowCount(), 34);
        // Flash attention: on for the llama family (ModelConfig); switching it off is one
        // undoable edit that reaches the model file.
        auto *flash = panel->findChild<QCheckBox *>(QStringLiteral("flashAttention"));
        QVERIFY(flash);
        QVERIFY(flash->isChecked());
        flash->setChecked(false);
        QCOMPARE(w->document()->model().toJson().at("flash_attention").get<bool>(), false);
        w->document()->undoStack()->undo();
        QVERIFY(flash->isChecked());
        // Preset picker.
        auto *preset = panel->findChild<QComboBox *>(QStringLiteral("modelPreset"));
        preset->setCurrentIndex(preset->findText(QStringLiteral("bert-large")));
        QCOMPARE(w->document()->model().toJson().at("preset").get<std::string>(), std::string("bert-large"));
        // Import of a bad file keeps the model and says why.
        QTemporaryDir dir;
        const QString bad = dir.filePath("bad.json");
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"family\": \"llama\", \"layers\": 2");
        f.close();
        const Json modelBefore = w->document()->model().toJson();
        QVERIFY(!panel->importFile(bad));
        QCOMPARE(w->document()->model().toJson(), modelBefore);
    }

    // Issue 9: an import keeps the run settings the user had (quickstart: llama2-7b at 4096
    // tokens, global batch 512), except a sequence length beyond the imported model's position
    // table (gpt2: n_positions 1024; bert-large: 512), which the status message then names;
    // the panel and the message call the model by the same name (the config's _name_or_path,
    // else the file's stem).
    void hfImportKeepsRunSettings_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("seq");
        QTest::newRow("mistral-7b") << "mistral-7b.json" << "mistral-7b" << 4096;   // 32768 positions
        QTest::newRow("mixtral-8x7b") << "mixtral-8x7b.json" << "mixtral-8x7b" << 4096;
        // Named by its "_name_or_path" (meta-llama/Llama-2-7b-hf); 4096 positions.
        QTest::newRow("llama2-7b") << "llama2-7b.json" << "Llama-2-7b-hf" << 4096;
        QTest::newRow("gpt2") << "gpt2.json" << "gpt2" << 1024;
        QTest::newRow("bert-large") << "bert-large-uncased.json" << "bert-large-uncased" << 512;
    }

    void hfImportKeepsRunSettings()
    {
        QFETCH(QString, file);
        QFETCH(QString, name);
        QFETCH(int, seq);
        auto w = makeWindow();
        WorkspaceDocument *doc = w->document();
        ModelPanel *panel = w->modelPanel();
        const Json before = doc->model().toJson();
        QCOMPARE(before.at("global_batch").get<int>(), 512);
        QCOMPARE(before.at("seq_length").get<int>(), 4096);
        QSignalSpy status(panel, &ModelPanel::statusMessage);
        QVERIFY(panel->importFile(QStringLiteral(NEST_SOURCE_DIR "/sample_configs/models/hf/") + file));
        const auto profile = doc->model().profile("model");
        QVERIFY2(profile.ok(), profile.ok() ? "" : profile.error().c_str());
        QCOMPARE(QString::fromStdString(profile->name), name);
        QCOMPARE(profile->globalBatch, 512);
        QCOMPARE(profile->seqLength, seq);
        QCOMPARE(panel->findChild<QSpinBox *>(QStringLiteral("globalBatch"))->value(), 512);
        QCOMPARE(panel->findChild<QSpinBox *>(QStringLiteral("seqLength"))->value(), seq);
        // The panel names the model as the message does, never "model".
        auto *summary = panel->findChild<QLabel *>(QStringLiteral("modelSummary"));
        QVERIFY(summary);
        QVERIFY2(summary->text().startsWith(QStringLiteral("<b>%1</b>").arg(name)), qPrintable(summary->text()));
        QCOMPARE(status.count(), 1);
        const QString message = status.last().at(0).toString();
        QVERIFY2(message.startsWith(QStringLiteral("Imported model %1 from %2").arg(name, file)), qPrintable(message));
        QVERIFY2(!message.contains(QLatin1String("global batch")), qPrintable(message));
        QCOMPARE(message.contains(QStringLiteral("sequence length 4096 → %1").arg(seq)), seq != 4096);
        // One undo step back to what the user had.
        doc->undoStack()->undo();
        QCOMPARE(doc->model().toJson(), before);
    }

    // Issue 49: the NEST artifact's profile gives no FLOPs. The Model dock said "0 FLOP per
    // token" and listed 0.0 GFLOP per layer; now it says they are not in the profile, and
    // which device the times were measured on.
    void artifactProfileSaysWhatItLacks()
    {
        auto w = makeWindow();
        ModelPanel *panel = w->modelPanel();
        QVERIFY(panel->importFile(QStringLiteral(NEST_SOURCE_DIR "/sample_configs/profiles/ilp_llama2_llama2_mbs_1_sl_4096_dev64.json")));
        auto *summary = panel->findChild<QLabel *>(QStringLiteral("modelSummary"));
        QVERIFY(summary);
        const QString text = summary->text();
        QVERIFY2(text.contains(QStringLiteral("FLOPs per token: not in the profile")), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("times measured on tpuv4-like")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral(" FLOP per token")), qPrintable(text));
        auto *table = panel->findChild<QTableView *>();
        QVERIFY(table);
        const QModelIndex block = table->model()->index(1, LayerTableModel::FwdFlopsColumn);   // block0
        QCOMPARE(block.data().toString(), QStringLiteral("n/a"));
        QVERIFY(block.data(Qt::ToolTipRole).toString().contains(QStringLiteral("FLOPs: not in the profile")));
        // A preset built from FLOPs keeps its numbers.
        w->document()->setModelPreset(QStringLiteral("llama2-7b"), std::nullopt);
        QVERIFY2(summary->text().contains(QStringLiteral("GFLOP per token (fwd+bwd)")), qPrintable(summary->text()));
        QVERIFY(table->model()->index(1, LayerTableModel::FwdFlopsColumn).data().toString() != QStringLiteral("n/a"));
    }

    // Issue 10: the template dialog writes units as the editor does (µs, not us), as spin
    // box suffixes; a bracket that is no unit ("GPUs (even)") stays in the label.
    void templateDialogWritesMicroseconds()
    {
        TemplateDialog dialog;
        dialog.setTemplate(QStringLiteral("paper-v100"));
        auto *latency = dialog.findChild<QDoubleSpinBox *>(QStringLiteral("node_latency_us"));
        auto *bandwidth = dialog.findChild<QDoubleSpinBox *>(QStringLiteral("node_bandwidth_GBps"));
        QVERIFY(latency && bandwidth);
        QCOMPARE(latency->suffix(), QStringLiteral(" µs"));
        QCOMPARE(bandwidth->suffix(), QStringLiteral(" GB/s"));
        QStringList labels;
        for (const QLabel *l : dialog.findChildren<QLabel *>())
            labels << l->text();
        QVERIFY2(!labels.join('|').contains(QLatin1String("(us)")), qPrintable(labels.join('|')));
        QVERIFY(labels.contains(QStringLiteral("NVLink latency")));
        QVERIFY(labels.contains(QStringLiteral("GPUs (even)")));
        // The value still means microseconds.
        QVERIFY(dialog.setParam(QStringLiteral("node_latency_us"), 3));
        const Result<Topology> t = dialog.cluster();
        QVERIFY(t.ok());
        QCOMPARE(t->levels[0].link.latency, 3e-6);
    }
};

QTEST_MAIN(TestClusterEditor)
#include "test_cluster_editor.moc"
