// Cluster templates and presets: sizes, link numbers against their published sources or a
// hand derivation (written next to each expectation), and every parameter error.
#include "ClusterTemplates.h"

#include <QtTest>

#include <cmath>
#include <regex>

using namespace nest;

namespace {

bool near(double a, double b)
{
    return std::abs(a - b) <= 1e-12 * std::max(std::abs(a), std::abs(b));
}

std::vector<int> fanouts(const Topology &t)
{
    // Walk the first child at each level: the templates are uniform.
    std::vector<int> out(t.levelCount());
    int g = t.root;
    for (int l = t.levelCount() - 1; l >= 0; --l) {
        const TopoGroup &grp = t.groups[g];
        out[l] = static_cast<int>(l == 0 ? grp.devices.size() : grp.children.size());
        if (l > 0)
            g = grp.children.front();
    }
    return out;
}

} // namespace

class TestClusterTemplates : public QObject {
    Q_OBJECT

private slots:
    void templateListIsSane()
    {
        QVERIFY(clusterTemplates().size() >= 8);
        for (const char *key : {"fat-tree", "spine-leaf", "superpod", "torus2d", "torus3d", "paper-fattree",
                                "paper-spineleaf", "paper-v100"})
            QVERIFY2(findClusterTemplate(key) != nullptr, key);
        QVERIFY(findClusterTemplate("mesh") == nullptr);
        for (const auto &t : clusterTemplates()) {
            QVERIFY(!t.title.empty() && !t.description.empty());
            for (const auto &p : t.params) {
                QVERIFY2(p.min <= p.value && p.value <= p.max, (t.key + "." + p.key).c_str());
                QVERIFY(!p.label.empty());
            }
            // Every template builds with its defaults and default device.
            const auto topo = makeCluster(t.key, {});
            QVERIFY2(topo.ok(), topo.error().c_str());
            QCOMPARE(topo->validate(), std::string());
        }
    }

    void fatTreeCounts()
    {
        // 8 devices x 4 nodes x 4 racks = 128.
        const auto t = makeCluster("fat-tree", {{"devices_per_node", 8}, {"nodes_per_rack", 4}, {"racks", 4}});
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 128);
        QCOMPARE(fanouts(*t), (std::vector<int>{8, 4, 4}));
        QCOMPARE(t->groupsAtLevel(0).size(), size_t(16));
        QCOMPARE(t->name, std::string("fat-tree-128"));
        // 2 x 3 x 5 = 30 with a custom device.
        const auto small = makeCluster("fat-tree", {{"devices_per_node", 2}, {"nodes_per_rack", 3}, {"racks", 5}},
                                       "a100-80gb");
        QVERIFY(small.ok());
        QCOMPARE(small->deviceCount(), 30);
        QCOMPARE(small->spec(29).name, std::string("a100-80gb"));
        // rack0 = nodes {0,1} {2,3} {4,5}; rack1 starts with node {6,7}.
        QCOMPARE(small->level(3, 4), 1);
        QCOMPARE(small->level(5, 6), 2);
        QCOMPARE(small->level(6, 7), 0);
    }

    void spineLeafOversubscription()
    {
        const auto t = makeCluster("spine-leaf", {{"spine_oversubscription", 4}, {"leaves", 2}});
        QVERIFY(t.ok());
        QCOMPARE(t->deviceCount(), 8 * 4 * 2);
        QCOMPARE(t->levels[2].link.oversubscription, 4.0);
        QCOMPARE(t->levels[1].link.oversubscription, 1.0);
        QCOMPARE(t->link(0, 63).oversubscription, 4.0);
    }

    void superpodCounts()
    {
        // DGX SuperPOD RA: 8 GPUs per DGX, 32 DGX per SU.
        const auto four = makeCluster("superpod", {{"sus", 4}});
        QVERIFY(four.ok());
        QCOMPARE(four->deviceCount(), 4 * 32 * 8);
        const auto one = clusterPreset("superpod-h100-256");
        QVERIFY(one.ok());
        QCOMPARE(one->deviceCount(), 1 * 32 * 8);
        // NVLink 4: 18 links x 25 GB/s = 450 GB/s per direction; NDR 400 Gb/s = 50 GB/s.
        QCOMPARE(four->levels[0].link.bandwidth, 450e9);
        QCOMPARE(four->levels[1].link.bandwidth, 400e9 / 8);
        QCOMPARE(four->spec(0).name, std::string("h100-sxm-80gb"));
        QCOMPARE(four->level(255, 256), 2);  // last GPU of SU 0 / first of SU 1
        QCOMPARE(four->level(7, 8), 1);
    }

    void paperFatTree_data()
    {
        QTest::addColumn<int>("devices");
        for (int n : {64, 128, 256, 512, 1024})
            QTest::newRow(qPrintable(QString::number(n))) << n;
    }
    void paperFatTree()
    {
        // Source: /work/shared/nest-artifact/inputs/*_dev<N>.json: devices_per_level
        // [8, 4, N/32], bws 900 / 100 / 400 (GB/s in the paper's text), latency_per_level
        // [0.0001, 0.0002, 0.0003] s, maxMemoryPerDevice 68719476736.
        QFETCH(int, devices);
        const auto t = clusterPreset("paper-fattree-" + std::to_string(devices));
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), devices);
        QCOMPARE(fanouts(*t), (std::vector<int>{8, 4, devices / 32}));
        QCOMPARE(t->levels[0].link.bandwidth, 900e9);
        QCOMPARE(t->levels[1].link.bandwidth, 100e9);
        QCOMPARE(t->levels[2].link.bandwidth, 400e9);
        QVERIFY(near(t->levels[0].link.latency, 0.0001));
        QVERIFY(near(t->levels[1].link.latency, 0.0002));
        QVERIFY(near(t->levels[2].link.latency, 0.0003));
        QCOMPARE(t->spec(0).memoryBytes, 68719476736.0);
        QCOMPARE(t->spec(0).peakFlops, 275e12);
        QCOMPARE(t->name, "paper-fattree-" + std::to_string(devices));
    }

    void paperSpineLeafAndV100()
    {
        // Paper §5.3: 8 H100 per node (900 GB/s), 4 nodes per leaf at 12.5 GB/s, 2:1 spine.
        const auto sl = clusterPreset("paper-spineleaf-1024");
        QVERIFY(sl.ok());
        QCOMPARE(sl->deviceCount(), 1024);
        QCOMPARE(fanouts(*sl), (std::vector<int>{8, 4, 32}));
        QCOMPARE(sl->levels[1].link.bandwidth, 12.5e9);
        QCOMPARE(sl->levels[2].link.oversubscription, 2.0);
        QCOMPARE(sl->spec(0).name, std::string("h100-sxm-80gb"));
        QCOMPARE(clusterPreset("paper-spineleaf-64")->deviceCount(), 64);
        // Paper §5.4: 2 V100 per node on 300 GB/s NVLink, nodes on one 12.5 GB/s switch.
        const auto v8 = clusterPreset("paper-v100-8");
        QVERIFY(v8.ok());
        QCOMPARE(v8->deviceCount(), 8);
        QCOMPARE(fanouts(*v8), (std::vector<int>{2, 4}));
        QCOMPARE(v8->level(0, 1), 0);
        QCOMPARE(v8->level(1, 2), 1);
        QCOMPARE(v8->link(1, 2).bandwidth, 12.5e9);
        QCOMPARE(v8->link(0, 1).bandwidth, 300e9);
        QCOMPARE(v8->spec(0).name, std::string("v100-32gb"));
        QCOMPARE(clusterPreset("paper-v100-16")->deviceCount(), 16);
    }

    void torusClasses_data()
    {
        QTest::addColumn<QString>("tmpl");
        QTest::addColumn<QVariantMap>("params");
        QTest::addColumn<QList<double>>("gbps");
        QTest::addColumn<QList<double>>("us");
        QTest::addColumn<QList<int>>("fan");
        // Link 50 GB/s, 1 us per hop. bandwidth = 50 * links per chip / mean hops;
        // latency = diameter in hops.
        // 8x8, tile 2x2: 1 link per dim inside -> 2; mean hops over the 12 ordered pairs =
        //   (8 one-hop + 4 two-hop)/12 = 4/3 -> 75; diameter 2.
        // block 4x4 (segments): links 2*3/4 per dim -> 3; per dim sum_{i,j}|i-j| = 20 for 4
        //   positions, times (16/4)^2 others, 2 dims -> 640 / (16*15) = 8/3 -> 56.25; diameter 6.
        // 8x8 rings: links 4; ring of 8: sum over pairs = 8 * 16 = 128, x 8^2 others x 2 dims
        //   = 16384 / (64*63) -> 200 * 4032 / 16384 = 49.21875; diameter 4 + 4 = 8.
        QTest::newRow("torus2d 8x8") << "torus2d" << QVariantMap{} << QList<double>{75, 56.25, 49.21875}
                                     << QList<double>{2, 6, 8} << QList<int>{4, 4, 4};
        // 4x4x4 (TPU v4 cube), tile 2x2x1 -> 75 and 2 hops as above.
        // block 4x4x1: two rings of 4 -> links 4; ring of 4: sum = 4 * (0+1+2+1) = 16, x 4^2
        //   others x 2 dims = 512 / 240 -> 200 * 240 / 512 = 93.75; diameter 2 + 2 = 4.
        // 4x4x4: links 6; 3 dims x 16 x 16^2 = 12288 / 4032 -> 300 * 4032 / 12288 = 98.4375;
        //   diameter 6.
        QTest::newRow("torus3d 4x4x4") << "torus3d" << QVariantMap{} << QList<double>{75, 93.75, 98.4375}
                                       << QList<double>{2, 4, 6} << QList<int>{4, 4, 4};
        // 4x4, tile 1x2 (one y-neighbour: links 1, mean hops 1 -> 50, 1 hop), block 2x2 (75, 2
        // hops), whole 4x4 torus (rings: links 4, 2 x 16 x 16 / 240 = 32/15 hops -> 93.75,
        // 4 hops). Link 100 GB/s doubles every bandwidth, hop 0.5 us halves every latency.
        QTest::newRow("torus2d 4x4 small tiles")
            << "torus2d"
            << QVariantMap{{"x", 4}, {"y", 4}, {"tile_x", 1}, {"tile_y", 2}, {"block_x", 2}, {"block_y", 2},
                           {"link_bandwidth_GBps", 100}, {"hop_latency_us", 0.5}}
            << QList<double>{100, 150, 187.5} << QList<double>{0.5, 1, 2} << QList<int>{2, 2, 4};
    }
    void torusClasses()
    {
        QFETCH(QString, tmpl);
        QFETCH(QVariantMap, params);
        QFETCH(QList<double>, gbps);
        QFETCH(QList<double>, us);
        QFETCH(QList<int>, fan);
        std::map<std::string, double> p;
        for (auto it = params.begin(); it != params.end(); ++it)
            p[it.key().toStdString()] = it.value().toDouble();
        const auto t = makeCluster(tmpl.toStdString(), p);
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->levelCount(), 3);
        for (int l = 0; l < 3; ++l) {
            QVERIFY2(near(t->levels[l].link.bandwidth, gbps[l] * 1e9),
                     qPrintable(QString("level %1: %2").arg(l).arg(t->levels[l].link.bandwidth)));
            QVERIFY(near(t->levels[l].link.latency, us[l] * 1e-6));
            QCOMPARE(fanouts(*t)[l], fan[l]);
        }
    }

    void presets()
    {
        const std::regex keyPattern("^[a-z0-9]+(-[a-z0-9]+)*$");
        QVERIFY(clusterPresets().size() >= 13);
        for (const auto &p : clusterPresets()) {
            QVERIFY2(std::regex_match(p.key, keyPattern), p.key.c_str());
            const auto t = clusterPreset(p.key);
            QVERIFY2(t.ok(), t.error().c_str());
            QCOMPARE(t->validate(), std::string());
            QCOMPARE(t->name, p.key);
            QVERIFY(findClusterTemplate(p.templateKey) != nullptr);
        }
        // Sizes named in the keys: 8 x 4 x 16 = 512; 8 x 8 torus; 4 x 4 x 4 torus.
        QCOMPARE(clusterPreset("a100-512")->deviceCount(), 512);
        QCOMPARE(clusterPreset("torus2d-tpuv4-64")->deviceCount(), 64);
        QCOMPARE(clusterPreset("torus3d-tpuv4-64")->deviceCount(), 64);
        QCOMPARE(clusterPreset("superpod-h100-1024")->deviceCount(), 1024);
        const auto missing = clusterPreset("a100-513");
        QVERIFY(!missing.ok());
        QVERIFY(missing.error().find("unknown cluster preset") != std::string::npos);
        QVERIFY(missing.error().find("a100-512") != std::string::npos);  // lists the known ones
    }

    void errors_data()
    {
        QTest::addColumn<QString>("tmpl");
        QTest::addColumn<QVariantMap>("params");
        QTest::addColumn<QString>("device");
        QTest::addColumn<QStringList>("needles");
        QTest::newRow("unknown template") << "mesh" << QVariantMap{} << ""
                                          << QStringList{"unknown cluster template 'mesh'", "fat-tree"};
        QTest::newRow("racks 0") << "fat-tree" << QVariantMap{{"racks", 0}} << ""
                                 << QStringList{"'racks'", "between 1 and 4096", "found 0"};
        QTest::newRow("racks 2.5") << "fat-tree" << QVariantMap{{"racks", 2.5}} << ""
                                   << QStringList{"'racks'", "whole number"};
        QTest::newRow("bandwidth 0") << "fat-tree" << QVariantMap{{"rack_bandwidth_GBps", 0}} << ""
                                     << QStringList{"rack_bandwidth_GBps", "between"};
        QTest::newRow("unknown parameter") << "fat-tree" << QVariantMap{{"rackz", 3}} << ""
                                           << QStringList{"'rackz'", "unknown parameter", "nodes_per_rack"};
        QTest::newRow("oversubscription 0.5") << "spine-leaf" << QVariantMap{{"spine_oversubscription", 0.5}} << ""
                                              << QStringList{"spine_oversubscription", "between 1"};
        QTest::newRow("paper devices 100") << "paper-fattree" << QVariantMap{{"devices", 100}} << ""
                                           << QStringList{"'devices'", "multiple of 32"};
        QTest::newRow("v100 odd") << "paper-v100" << QVariantMap{{"devices", 7}} << ""
                                  << QStringList{"'devices'", "multiple of 2"};
        QTest::newRow("torus block") << "torus2d" << QVariantMap{{"block_x", 3}} << ""
                                     << QStringList{"block_x", "multiple of tile_x"};
        QTest::newRow("torus block divides") << "torus2d" << QVariantMap{{"block_y", 16}} << ""
                                             << QStringList{"block_y", "must divide y"};
        QTest::newRow("too many devices")
            << "fat-tree" << QVariantMap{{"devices_per_node", 64}, {"nodes_per_rack", 1024}, {"racks", 64}} << ""
            << QStringList{"4194304 devices", "at most 1048576"};
        QTest::newRow("unknown device") << "fat-tree" << QVariantMap{} << "tpu-v9"
                                        << QStringList{"unknown device preset 'tpu-v9'"};
    }
    void errors()
    {
        QFETCH(QString, tmpl);
        QFETCH(QVariantMap, params);
        QFETCH(QString, device);
        QFETCH(QStringList, needles);
        std::map<std::string, double> p;
        for (auto it = params.begin(); it != params.end(); ++it)
            p[it.key().toStdString()] = it.value().toDouble();
        const auto t = makeCluster(tmpl.toStdString(), p, device.toStdString());
        QVERIFY(!t.ok());
        for (const auto &n : needles)
            QVERIFY2(t.error().find(n.toStdString()) != std::string::npos, t.error().c_str());
    }

    void nanParameter()
    {
        const auto t = makeCluster("fat-tree", {{"racks", std::nan("")}});
        QVERIFY(!t.ok());
        QVERIFY2(t.error().find("finite") != std::string::npos, t.error().c_str());
    }

    void templateDefaultDeviceByName()
    {
        // Naming the default device explicitly is the same as leaving it out.
        const auto a = makeCluster("paper-fattree", {{"devices", 64}}, "tpuv4-like");
        const auto b = makeCluster("paper-fattree", {{"devices", 64}});
        QVERIFY(a.ok() && b.ok());
        QVERIFY(*a == *b);
        QCOMPARE(templateDefaultDevice(*findClusterTemplate("paper-v100")).name, std::string("v100-32gb"));
    }
};

QTEST_APPLESS_MAIN(TestClusterTemplates)
#include "test_cluster_templates.moc"
