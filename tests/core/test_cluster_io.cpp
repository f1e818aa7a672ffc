// Cluster files: the three input forms, round trips, the sample files and every error path
// (each message must name the file, the JSON path and the reason).
#include "ClusterIO.h"
#include "ClusterTemplates.h"

#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace nest;

namespace {

// The compact example of issue 2, verbatim.
const char *const CompactExample = R"({"name": "a100-512", "device": "a100-80gb",
 "levels": [{"name": "node",  "fanout": 8,  "bandwidth_GBps": 300, "latency_us": 1},
            {"name": "rack",  "fanout": 4,  "bandwidth_GBps": 25,  "latency_us": 5},
            {"name": "spine", "fanout": 16, "bandwidth_GBps": 25,  "latency_us": 8, "oversubscription": 2}]})";

const std::string SampleDir = std::string(NEST_SOURCE_DIR) + "/sample_configs/clusters";

Topology parse(const std::string &text)
{
    auto j = parseJsonText(text, "inline");
    if (!j)
        qFatal("%s", j.error().c_str());
    auto t = clusterFromJson(*j, "inline");
    if (!t)
        qFatal("%s", t.error().c_str());
    return *t;
}

Topology reparse(const Topology &t)
{
    auto back = clusterFromJson(clusterToJson(t), "roundtrip");
    if (!back)
        qFatal("%s", back.error().c_str());
    return *back;
}

int groupNamed(const Topology &t, const std::string &name)
{
    for (size_t g = 0; g < t.groups.size(); ++g)
        if (t.groups[g].name == name)
            return static_cast<int>(g);
    return -1;
}

// Small explicit documents for the error table; `tree` is spliced into a valid frame.
QString explicitWith(const std::string &tree)
{
    return QString::fromStdString(R"({"format": "explicit", "device_types": {"gpu": "h100-sxm-80gb"},
 "levels": [{"name": "node", "bandwidth_GBps": 450, "latency_us": 1},
            {"name": "rack", "bandwidth_GBps": 50, "latency_us": 2},
            {"name": "spine", "bandwidth_GBps": 25, "latency_us": 4}],
 "tree": )" + tree + "}");
}

QString compactWith(const std::string &levels, const std::string &device = "\"a100-80gb\"")
{
    return QString::fromStdString(R"({"name": "t", "device": )" + device + R"(, "levels": )" + levels + "}");
}

} // namespace

class TestClusterIO : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    std::string tempPath(const std::string &name) const { return m_dir.filePath(QString::fromStdString(name)).toStdString(); }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void compactExample()
    {
        const Topology t = parse(CompactExample);
        QCOMPARE(t.validate(), std::string());
        QCOMPARE(t.name, std::string("a100-512"));
        QCOMPARE(t.deviceCount(), 8 * 4 * 16);
        QCOMPARE(t.levelCount(), 3);
        QCOMPARE(t.spec(0).name, std::string("a100-80gb"));
        QCOMPARE(t.levels[0].link.bandwidth, 300e9);
        QCOMPARE(t.levels[1].link.bandwidth, 25e9);
        QCOMPARE(t.levels[1].link.oversubscription, 1.0);  // default
        QCOMPARE(t.levels[2].link.oversubscription, 2.0);
        QVERIFY(std::abs(t.levels[2].link.latency - 8e-6) < 1e-18);
        QCOMPARE(t.level(31, 32), 2);  // 32 devices per rack
        QCOMPARE(t.level(30, 31), 0);
        QCOMPARE(t.level(7, 8), 1);
        const auto preset = clusterPreset("a100-512");
        QVERIFY(preset.ok());
        QVERIFY(t == *preset);
    }

    void compactRoundTrip()
    {
        const Topology t = parse(CompactExample);
        const Topology back = reparse(t);
        QVERIFY(back == t);
        // Through a file as well: load -> save -> load.
        const std::string file = tempPath("a100.json");
        QVERIFY(saveCluster(file, t).ok());
        const auto loaded = loadCluster(file);
        QVERIFY2(loaded.ok(), loaded.error().c_str());
        QVERIFY(*loaded == t);
        // The compact writer gives the same cluster back.
        const auto compact = clusterToCompactJson(t);
        QVERIFY(compact.has_value());
        QCOMPARE(compact->at("levels").size(), size_t(3));
        QCOMPARE(compact->at("levels")[2].at("fanout").get<int>(), 16);
        QVERIFY(*clusterFromJson(*compact, "compact") == t);
    }

    void explicitNonUniform()
    {
        // sample_configs/clusters/nonuniform-3-4.json: rack0 = 3 H100 nodes x 8, rack1 = 4
        // A100 nodes x 8 with a link override (25 GB/s, 3 us, oversubscription inherited 1).
        const auto t = loadCluster(SampleDir + "/nonuniform-3-4.json");
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 56);
        const int rack0 = groupNamed(*t, "rack0"), rack1 = groupNamed(*t, "rack1");
        QCOMPARE(t->groups[rack0].children.size(), size_t(3));
        QCOMPARE(t->groups[rack1].children.size(), size_t(4));
        QVERIFY(!t->groups[rack0].linkOverride.has_value());
        QVERIFY(t->groups[rack1].linkOverride.has_value());
        QCOMPARE(t->groups[rack1].linkOverride->bandwidth, 25e9);
        QVERIFY(std::abs(t->groups[rack1].linkOverride->latency - 3e-6) < 1e-18);
        QCOMPARE(t->groups[rack1].linkOverride->oversubscription, 1.0);
        // Device types in first-use order: h100 (rack0) then a100.
        QCOMPARE(t->deviceTypes.size(), size_t(2));
        QCOMPARE(t->spec(0).name, std::string("h100-sxm-80gb"));
        QCOMPARE(t->spec(24).name, std::string("a100-80gb"));  // node3 starts at 3 * 8
        QCOMPARE(t->level(23, 24), 2);                          // rack0's last / rack1's first
        QCOMPARE(t->link(24, 32).bandwidth, 25e9);              // node3 / node4 meet at rack1
        QCOMPARE(t->link(0, 8).bandwidth, 50e9);                // rack0 keeps the level's 50
        QCOMPARE(t->link(0, 55).oversubscription, 2.0);         // across the spine
        // load -> save -> load.
        const std::string file = tempPath("nu.json");
        QVERIFY(saveCluster(file, *t).ok());
        const auto again = loadCluster(file);
        QVERIFY2(again.ok(), again.error().c_str());
        QVERIFY(*again == *t);
        QVERIFY(!clusterToCompactJson(*t).has_value());  // not uniform
    }

    void explicitDefaultsAndEditedTree()
    {
        // Names, "level" and per-node "device" may be left out; one "device" for every node.
        const Topology t = parse(R"({"format": "explicit", "name": "tiny", "device": "v100",
            "levels": [{"name": "node", "bandwidth_GBps": 300}, {"name": "switch", "bandwidth_GBps": 12.5}],
            "tree": {"children": [{"devices": 2}, {"devices": 1}, {"devices": 3}]}})");
        QCOMPARE(t.deviceCount(), 6);
        QCOMPARE(t.groups[t.root].name, std::string("switch0"));
        QCOMPARE(t.groups[t.ancestor(5, 0)].name, std::string("node2"));
        QCOMPARE(t.levels[0].link.latency, 0.0);
        QCOMPARE(t.level(1, 2), 1);
        QCOMPARE(t.level(3, 5), 0);
        QVERIFY(reparse(t) == t);

        // A tree edited in memory (node moved between racks). Its group vector is no longer in
        // depth-first order, which the loader produces, so compare what the planner sees
        // (levels and links of every pair), then require load -> save -> load equality.
        Topology edited = parse(CompactExample);
        const int rack0 = groupNamed(edited, "rack0"), rack1 = groupNamed(edited, "rack1");
        const int moved = edited.groups[rack0].children.back();
        edited.groups[rack0].children.pop_back();
        edited.groups[rack1].children.push_back(moved);
        edited.groups[rack1].linkOverride = LinkParams{10e9, 3e-6, 1.5};
        edited.reindex();
        QCOMPARE(edited.validate(), std::string());
        const Topology loaded = reparse(edited);
        QCOMPARE(loaded.deviceCount(), edited.deviceCount());
        for (int a = 0; a < edited.deviceCount(); ++a)
            for (int b = a + 1; b < edited.deviceCount(); ++b) {
                if (loaded.level(a, b) != edited.level(a, b) || !(loaded.link(a, b) == edited.link(a, b)))
                    QFAIL(qPrintable(QString("pair %1, %2 differs").arg(a).arg(b)));
            }
        // rack0 now has 3 nodes (0..23), rack1 5 (24..63): 24 and 63 share rack1's override.
        QCOMPARE(loaded.level(23, 24), 2);
        QCOMPARE(loaded.level(24, 63), 1);
        QCOMPARE(loaded.link(24, 63).bandwidth, 10e9);
        QVERIFY(reparse(loaded) == loaded);
        QVERIFY(!clusterToCompactJson(edited).has_value());
    }

    void uniformAsExplicitEqualsUniform()
    {
        for (const auto &p : clusterPresets()) {
            const auto t = clusterPreset(p.key);
            QVERIFY(t.ok());
            QVERIFY2(reparse(*t) == *t, p.key.c_str());
            const auto compact = clusterToCompactJson(*t);
            QVERIFY2(compact.has_value(), p.key.c_str());
            QVERIFY2(*clusterFromJson(*compact, p.key) == *t, p.key.c_str());
        }
    }

    void templateForm()
    {
        const auto t = loadCluster(SampleDir + "/fat-tree-8x4x4.json");
        QVERIFY2(t.ok(), t.error().c_str());
        QCOMPARE(t->deviceCount(), 128);
        QCOMPARE(t->name, std::string("fat-tree-8x4x4"));
        QCOMPARE(t->levels[2].link.bandwidth, 25e9);
        const Topology inlineDevice = parse(R"({"template": "paper-v100", "params": {"devices": 8},
            "device": {"name": "v100-16", "peak_tflops": 125, "memory_GB": 16, "memory_bandwidth_GBps": 900}})");
        QCOMPARE(inlineDevice.deviceCount(), 8);
        QCOMPARE(inlineDevice.spec(7).memoryBytes, 16e9);
    }

    void sampleFiles()
    {
        namespace fs = std::filesystem;
        int files = 0, matchedPresets = 0;
        for (const auto &entry : fs::directory_iterator(SampleDir)) {
            if (entry.path().extension() != ".json")
                continue;
            ++files;
            const std::string file = entry.path().string();
            const auto t = loadCluster(file);
            QVERIFY2(t.ok(), t.error().c_str());
            QCOMPARE(t->validate(), std::string());
            const std::string stem = entry.path().stem().string();
            if (const auto preset = clusterPreset(stem); preset.ok()) {
                ++matchedPresets;
                QVERIFY2(*t == *preset, file.c_str());
            }
            const std::string copy = tempPath("copy-" + stem + ".json");
            QVERIFY(saveCluster(copy, *t).ok());
            const auto again = loadCluster(copy);
            QVERIFY2(again.ok() && *again == *t, file.c_str());
        }
        // One file per preset, plus the non-uniform and template examples.
        QCOMPARE(matchedPresets, static_cast<int>(clusterPresets().size()));
        QVERIFY(files >= matchedPresets + 2);
    }

    void resolve()
    {
        const auto preset = resolveCluster("paper-v100-16");
        QVERIFY(preset.ok());
        QCOMPARE(preset->deviceCount(), 16);
        const auto file = resolveCluster(SampleDir + "/nonuniform-3-4.json");
        QVERIFY(file.ok());
        QCOMPARE(file->deviceCount(), 56);
        const auto tmpl = resolveCluster("superpod");
        QVERIFY(tmpl.ok());
        QCOMPARE(tmpl->deviceCount(), 1024);
        const auto unknown = resolveCluster("a100-999");
        QVERIFY(!unknown.ok());
        QVERIFY(unknown.error().find("a100-999") != std::string::npos);
        QVERIFY(unknown.error().find("paper-fattree-64") != std::string::npos);
        const auto missing = resolveCluster("no/such/cluster.json");
        QVERIFY(!missing.ok());
        QVERIFY(missing.error().find("no/such/cluster.json: no such file") != std::string::npos);
    }

    void saveErrors()
    {
        Topology broken = parse(CompactExample);
        broken.levels[1].link.bandwidth = -1;
        const auto refused = saveCluster(tempPath("broken.json"), broken);
        QVERIFY(!refused.ok());
        QVERIFY(refused.error().find("not saved") != std::string::npos);
        QVERIFY(refused.error().find("bandwidth") != std::string::npos);
        const std::string badDir = tempPath("missing-dir/out.json");
        const auto unwritable = saveCluster(badDir, parse(CompactExample));
        QVERIFY(!unwritable.ok());
        QVERIFY(unwritable.error().find(badDir) != std::string::npos);
    }

    void loadErrors_data()
    {
        QTest::addColumn<QString>("name");     // file name in the temp dir
        QTest::addColumn<QString>("content");  // "<none>" = do not create; "<dir>" = a directory
        QTest::addColumn<QString>("path");     // JSON path expected in the message ("" = none)
        QTest::addColumn<QString>("reason");   // a word of the reason

        QTest::newRow("missing file") << "missing.json" << "<none>" << "" << "no such file";
        QTest::newRow("directory") << "adir.json" << "<dir>" << "" << "directory";
        QTest::newRow("empty file") << "empty.json" << "  \n" << "" << "empty";
        QTest::newRow("malformed") << "malformed.json" << R"({"name": "x", "levels": [)" << "" << "malformed";
        QTest::newRow("top-level array") << "array.json" << "[1, 2]" << "" << "expected an object";
        QTest::newRow("missing levels") << "nolevels.json" << R"({"name": "x", "device": "a100"})" << "levels"
                                        << "missing";
        QTest::newRow("empty levels") << "emptylevels.json" << compactWith("[]") << "levels" << "at least one";
        QTest::newRow("fanout 0") << "fanout0.json"
                                  << compactWith(R"([{"name": "node", "fanout": 0, "bandwidth_GBps": 300}])")
                                  << "levels[0].fanout" << "between 1";
        QTest::newRow("fanout 2.5") << "fanout25.json"
                                    << compactWith(R"([{"name": "node", "fanout": 2.5, "bandwidth_GBps": 300}])")
                                    << "levels[0].fanout" << "whole number";
        QTest::newRow("negative bandwidth")
            << "negbw.json"
            << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 2, "bandwidth_GBps": -25}])")
            << "levels[1].bandwidth_GBps" << "positive";
        QTest::newRow("bandwidth as a string")
            << "strbw.json" << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": "300"}])")
            << "levels[0].bandwidth_GBps" << "expected a number";
        QTest::newRow("negative latency")
            << "neglat.json" << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300, "latency_us": -1}])")
            << "levels[0].latency_us" << "negative";
        QTest::newRow("oversubscription 0.5")
            << "over.json"
            << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 2, "bandwidth_GBps": 25},
                               {"name": "spine", "fanout": 2, "bandwidth_GBps": 25, "oversubscription": 0.5}])")
            << "levels[2].oversubscription" << ">= 1";
        QTest::newRow("huge number 1e999")
            << "inf.json"
            << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 2, "bandwidth_GBps": 1e999}])")
            << "levels[1].bandwidth_GBps" << "out of range";
        QTest::newRow("unknown device preset")
            << "dev.json" << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300}])", "\"gtx-1080\"")
            << "device" << "unknown device preset";
        QTest::newRow("inline device without memory")
            << "devinline.json"
            << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300}])",
                           R"({"name": "x", "peak_tflops": 100, "memory_bandwidth_GBps": 1000})")
            << "device.memory_GB" << "missing";
        QTest::newRow("unknown key") << "typo.json"
                                     << compactWith(R"([{"name": "node", "fanot": 8, "bandwidth_GBps": 300}])")
                                     << "levels[0].fanot" << "unknown key";
        QTest::newRow("duplicate level name")
            << "dup.json"
            << compactWith(R"([{"name": "node", "fanout": 8, "bandwidth_GBps": 300},
                               {"name": "node", "fanout": 2, "bandwidth_GBps": 25}])")
            << "levels[1].name" << "duplicate";
        QTest::newRow("too many devices")
            << "huge.json"
            << compactWith(R"([{"name": "node", "fanout": 1024, "bandwidth_GBps": 300},
                               {"name": "rack", "fanout": 1024, "bandwidth_GBps": 25},
                               {"name": "spine", "fanout": 2, "bandwidth_GBps": 25}])")
            << "levels[2].fanout" << "more than 1048576";
        QTest::newRow("unknown format") << "fmt.json" << R"({"format": "yaml"})" << "format" << "unknown format";
        QTest::newRow("zero devices")
            << "zero.json" << explicitWith(R"({"children": [{"children": [{"devices": 0}]}]})")
            << "tree.children[0].children[0].devices" << "between 1";
        QTest::newRow("missing devices")
            << "nodev.json" << explicitWith(R"({"children": [{"children": [{"name": "n"}]}]})")
            << "tree.children[0].children[0].devices" << "missing";
        QTest::newRow("tree too shallow")
            << "shallow.json" << explicitWith(R"({"children": [{"devices": 8}]})") << "tree.children[0].devices"
            << "shallower";
        QTest::newRow("tree too deep")
            << "deep.json" << explicitWith(R"({"children": [{"children": [{"children": [{"devices": 8}]}]}]})")
            << "tree.children[0].children[0].children" << "deeper";
        QTest::newRow("unknown level name")
            << "lvl.json" << explicitWith(R"({"children": [{"level": "pod", "children": [{"devices": 8}]}]})")
            << "tree.children[0].level" << "unknown level name";
        QTest::newRow("level at the wrong depth")
            << "depth.json" << explicitWith(R"({"level": "node", "children": [{"children": [{"devices": 8}]}]})")
            << "tree.level" << "depth";
        QTest::newRow("unknown device type")
            << "devtype.json" << explicitWith(R"({"children": [{"children": [{"device": "tpu", "devices": 8}]}]})")
            << "tree.children[0].children[0].device" << "unknown device type";
        QTest::newRow("empty children")
            << "nochildren.json" << explicitWith(R"({"children": []})") << "tree.children" << "at least one";
        QTest::newRow("bad link override")
            << "override.json"
            << explicitWith(R"({"children": [{"link": {"bandwidth_GBps": 0}, "children": [{"devices": 8}]}]})")
            << "tree.children[0].link.bandwidth_GBps" << "positive";
        QTest::newRow("unknown template") << "tmpl.json" << R"({"template": "hypercube"})" << "template"
                                          << "unknown cluster template";
        QTest::newRow("template param out of range")
            << "tparam.json" << R"({"template": "fat-tree", "params": {"racks": 0}})" << "params.racks" << "between";
        QTest::newRow("template param not a number")
            << "tparam2.json" << R"({"template": "fat-tree", "params": {"racks": "four"}})" << "params.racks"
            << "expected a number";
        QTest::newRow("template param unknown")
            << "tparam3.json" << R"({"template": "superpod", "params": {"pods": 2}})" << "params.pods"
            << "unknown parameter";
        QTest::newRow("template device unknown")
            << "tdev.json" << R"({"template": "superpod", "device": "h1000"})" << "device" << "unknown device preset";
    }
    void loadErrors()
    {
        QFETCH(QString, name);
        QFETCH(QString, content);
        QFETCH(QString, path);
        QFETCH(QString, reason);
        const std::string file = tempPath(name.toStdString());
        if (content == "<dir>") {
            std::filesystem::create_directories(file);
        } else if (content != "<none>") {
            std::ofstream(file, std::ios::binary) << content.toStdString();
        }
        const auto t = loadCluster(file);
        QVERIFY(!t.ok());
        const std::string &msg = t.error();
        QVERIFY2(msg.rfind(file + ": ", 0) == 0, msg.c_str());  // starts with the file name
        if (!path.isEmpty())
            QVERIFY2(msg.find("at " + path.toStdString() + ": ") != std::string::npos, msg.c_str());
        QVERIFY2(msg.find(reason.toStdString()) != std::string::npos, msg.c_str());
        QVERIFY2(msg.find('\n') == std::string::npos, msg.c_str());  // one message, one line
    }
};

QTEST_APPLESS_MAIN(TestClusterIO)
#include "test_cluster_io.moc"
