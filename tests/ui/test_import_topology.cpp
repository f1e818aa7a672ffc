// File > Import Topology (issue 22, point 1): the dialog asks for what the file lacks, pre-filled
// with what it says; the imported cluster replaces the workspace's cluster as one undo step,
// keeping the model. Expected numbers come from the samples' own text (see
// tests/core/test_cluster_import.cpp for the arithmetic): the Slurm file has 16 nodes on
// 4 levels, the NCCL dump 8 H100 on 18 x 25 GB/s NVLink, the nvidia-smi matrix 8 GPUs on NV18.
#include "SourceDir.h"
#include "ClusterTreeModel.h"
#include "ImportTopologyDialog.h"
#include "PropertyEditor.h"
#include "TopologyScene.h"
#include "WorkspaceDocument.h"

#include "Workspace.h"

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QUndoStack>
#include <QtTest>

#include "UiTestSupport.h"

using namespace nest;
using namespace nest::ui;
using namespace uitest;

namespace {

const std::string kImports = NEST_SOURCE_DIR "/sample_configs/clusters/imports/";

ClusterSketch sketchOf(const std::string &file, const ClusterImportOptions &options = {})
{
    auto s = sketchCluster(kImports + file, options);
    if (!s)
        qFatal("%s", s.error().c_str());
    return std::move(s).value();
}

} // namespace

class TestImportTopology : public QObject {
    Q_OBJECT
private slots:
    void slurmDialogAsksForDeviceCountAndBandwidths()
    {
        ImportTopologyDialog dialog(sketchOf("slurm-topology.conf"));
        // The file names no GPU and no count: Import waits until they and every bandwidth are set.
        QVERIFY(!dialog.cluster().ok());
        QVERIFY(dialog.findChild<QSpinBox *>(QStringLiteral("gpusPerNode"))->isEnabled());
        QVERIFY(dialog.findChild<QDoubleSpinBox *>(QStringLiteral("bandwidth3")) != nullptr);   // 4 levels
        QVERIFY(dialog.findChild<QDoubleSpinBox *>(QStringLiteral("bandwidth4")) == nullptr);
        QVERIFY(dialog.setDevice(QStringLiteral("a100-80gb")));
        dialog.setGpusPerNode(4);
        QVERIFY(dialog.setLevel(0, 300, 1, 1));
        QVERIFY(dialog.setLevel(1, 25, 2, 1));
        QVERIFY(dialog.setLevel(2, 25, 4, 1));
        QVERIFY(!dialog.cluster().ok());   // the core still lacks a bandwidth
        QVERIFY(dialog.findChild<QLabel *>(QStringLiteral("preview"))->text().contains(QStringLiteral("core")));
        QVERIFY(dialog.setLevel(3, 12.5, 8, 2));
        const Result<Topology> t = dialog.cluster();
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 64);   // 16 nodes x 4
        QCOMPARE(t->levels[3].link.bandwidth, 12.5e9);
        QCOMPARE(t->levels[3].link.oversubscription, 2.0);
    }

    void nodeFileFillsTheForm()
    {
        ClusterImportOptions withNode;
        withNode.nodeFile = kImports + "dgx-h100-nccl-topo.xml";
        ImportTopologyDialog dialog(sketchOf("slurm-topology.conf", withNode));
        // Device, count and every bandwidth come from the dump; the count is fixed by it.
        QCOMPARE(dialog.findChild<QComboBox *>(QStringLiteral("device"))->currentData().toString(),
                 QStringLiteral("h100-sxm-80gb"));
        QVERIFY(!dialog.findChild<QSpinBox *>(QStringLiteral("gpusPerNode"))->isEnabled());
        QCOMPARE(dialog.findChild<QDoubleSpinBox *>(QStringLiteral("bandwidth0"))->value(), 450.0);
        QCOMPARE(dialog.findChild<QDoubleSpinBox *>(QStringLiteral("bandwidth2"))->value(), 50.0);
        const Result<Topology> t = dialog.cluster();
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 128);
    }

    void nvidiaSmiBandwidthFollowsTheDevice()
    {
        ImportTopologyDialog dialog(sketchOf("h100x8-nvidia-smi-topo.txt"));
        auto *bandwidth = dialog.findChild<QDoubleSpinBox *>(QStringLiteral("bandwidth0"));
        QCOMPARE(bandwidth->value(), 0.0);   // no device yet: no link speed
        QVERIFY(dialog.setDevice(QStringLiteral("h100-sxm-80gb")));
        QCOMPARE(bandwidth->value(), 450.0);   // NV18 x 25 GB/s
        QVERIFY(dialog.setDevice(QStringLiteral("b200")));
        QCOMPARE(bandwidth->value(), 900.0);   // NV18 x 50 GB/s (NVLink 5)
        const Result<Topology> t = dialog.cluster();
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 8);
    }

    void messagesUseTheDialogsWords()
    {
        // Issue 49: the ASTRA-sim import said "give --device PRESET", a command-line flag.
        ImportTopologyDialog dialog(sketchOf("astra-sim-network.yml"));
        const QString text = dialog.findChild<QLabel *>(QStringLiteral("preview"))->text();
        QVERIFY2(text.contains(QStringLiteral("Choose the device")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("--")), qPrintable(text));
        QVERIFY(dialog.setDevice(QStringLiteral("h100-sxm-80gb")));
        const Result<Topology> t = dialog.cluster();
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 128);
    }

    void nvlinkPairsAreTwoLevelsInTheForm()
    {
        // The NC A100 v4 dump: the form has the NVLink pairs and the PCIe level, both filled.
        ImportTopologyDialog dialog(sketchOf("azure-ncv4-nccl-topo.xml"));
        QCOMPARE(dialog.findChild<QDoubleSpinBox *>(QStringLiteral("bandwidth0"))->value(), 300.0);
        QCOMPARE(dialog.findChild<QDoubleSpinBox *>(QStringLiteral("bandwidth1"))->value(), 24.0);
        QVERIFY(dialog.setDevice(QStringLiteral("a100-80gb")));
        const Result<Topology> t = dialog.cluster();
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->levelCount(), 2);
        QCOMPARE(t->deviceCount(), 4);
    }

    void importReplacesTheClusterAsOneUndoStep()
    {
        auto ws = loadWorkspace(kQuickstart.toStdString());
        QVERIFY2(ws.ok(), ws.error().c_str());
        WorkspaceDocument doc;
        doc.load(std::move(ws).value(), kQuickstart, WorkspaceDocument::FileKind::Workspace);
        const Topology before = doc.topology();
        const ModelSource model = doc.model();
        ImportTopologyDialog dialog(sketchOf("dgx-h100-nccl-topo.xml"));
        const Result<Topology> imported = dialog.cluster();
        QVERIFY2(imported.ok(), imported.error().c_str());
        QSignalSpy structure(&doc, &WorkspaceDocument::structureChanged);
        QVERIFY(doc.replaceCluster(*imported, QStringLiteral("Import topology")));
        QCOMPARE(doc.undoStack()->count(), 1);
        QCOMPARE(doc.topology().deviceCount(), 8);
        QCOMPARE(doc.topology().levelCount(), 1);
        QVERIFY(doc.model() == model);
        QVERIFY(doc.isModified());
        QCOMPARE(structure.count(), 1);
        doc.undoStack()->undo();
        QVERIFY(doc.topology() == before);
        doc.undoStack()->redo();
        QCOMPARE(doc.topology().deviceCount(), 8);
        // An invalid cluster is refused with the reason, and nothing is pushed.
        QSignalSpy refused(&doc, &WorkspaceDocument::editRefused);
        QVERIFY(!doc.replaceCluster(Topology{}, QStringLiteral("Import topology")));
        QCOMPARE(refused.count(), 1);
        QCOMPARE(doc.undoStack()->count(), 1);
    }

    void viewsFollowAReplacementOfDifferentDepth()
    {
        // The quickstart cluster has 3 levels and 7 nodes; the Slurm import 4 levels and 16
        // nodes: the tree, canvas and level table follow the replacement and its undo.
        auto ws = loadWorkspace(kQuickstart.toStdString());
        QVERIFY2(ws.ok(), ws.error().c_str());
        WorkspaceDocument doc;
        doc.load(std::move(ws).value(), kQuickstart, WorkspaceDocument::FileKind::Workspace);
        ClusterTreeModel model(&doc);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        TopologyScene scene(&doc);
        PropertyEditor editor(&doc);
        ClusterImportOptions withNode;
        withNode.nodeFile = kImports + "dgx-h100-nccl-topo.xml";
        ImportTopologyDialog dialog(sketchOf("slurm-topology.conf", withNode));
        const Result<Topology> imported = dialog.cluster();
        QVERIFY2(imported.ok(), imported.error().c_str());
        QVERIFY(doc.replaceCluster(*imported, QStringLiteral("Import topology")));
        const int gpu020 = groupNamed(doc.topology(), "gpu020");
        QVERIFY(gpu020 >= 0);
        QVERIFY(scene.nodeItem(gpu020) != nullptr);
        QVERIFY(editor.findChild<QDoubleSpinBox *>(QStringLiteral("levelBandwidth3")) != nullptr);
        QCOMPARE(model.rowCount(), 1);   // the root, core0
        doc.undoStack()->undo();
        QCOMPARE(doc.topology().levelCount(), 3);
        QVERIFY(scene.nodeItem(groupNamed(doc.topology(), "node0")) != nullptr);
        QTRY_VERIFY(editor.findChild<QDoubleSpinBox *>(QStringLiteral("levelBandwidth3")) == nullptr);
    }

    void brokenFileErrorNamesFileAndLine()
    {
        const QString dir = QDir::tempPath() + QStringLiteral("/nest-import-test");
        QDir().mkpath(dir);
        const QString file = dir + QStringLiteral("/bad.conf");
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("SwitchName=l1 Nodes=n[1-2]\nSwitchName=l2 Nodes=n[3-\n");
        f.close();
        const Result<ClusterSketch> s = sketchCluster(file.toStdString(), {});
        QVERIFY(!s.ok());
        QVERIFY2(QString::fromStdString(s.error()).startsWith(file + QStringLiteral(":2:")), s.error().c_str());
        QDir(dir).removeRecursively();
    }
};

QTEST_MAIN(TestImportTopology)
#include "test_import_topology.moc"
