// Workspace files: round trip, defaults, error messages with JSON paths, the shipped samples.
#include "ClusterTemplates.h"
#include "Workspace.h"

#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace nest;

namespace {
const std::string kSamples = std::string(NEST_SOURCE_DIR) + "/sample_configs/workspaces/";

Json clusterJson()
{
    // fat-tree: 2 devices/node, 2 nodes/rack, 2 racks = 8 devices.
    return Json{{"template", "fat-tree"},
                {"params", {{"devices_per_node", 2}, {"nodes_per_rack", 2}, {"racks", 2}}}};
}
} // namespace

class TestWorkspace : public QObject {
    Q_OBJECT
private slots:
    void defaultsWhenOnlyClusterGiven()
    {
        auto w = workspaceFromJson(Json{{"cluster", clusterJson()}}, "w.json");
        QVERIFY2(w.ok(), w.error().c_str());
        QCOMPARE(w->cluster.deviceCount(), 8);  // 2 * 2 * 2
        QVERIFY(w->model.is_object() && w->model.empty());
        QVERIFY(w->plans.empty());
        QCOMPARE(w->search, SearchSettings{});
        QCOMPARE(w->search.microBatches, (std::vector<int>{1, 2, 4, 8}));
    }

    void roundTrip()
    {
        Workspace w;
        auto t = makeCluster("spine-leaf", {{"devices_per_node", 4}, {"nodes_per_leaf", 2}, {"leaves", 3}});
        QVERIFY2(t.ok(), t.error().c_str());
        w.cluster = *t;
        w.model = Json{{"preset", "gpt3-35b"}, {"seq_length", 1024}};
        w.search.microBatches = {2, 16};
        w.search.schedules = {Schedule::GPipe};
        w.search.maxStages = 6;
        w.search.allowZero = false;
        w.search.allowRecompute = false;
        w.search.allowSequenceParallel = false;
        w.search.memoryHeadroom = 0.125;
        w.search.planner = "exhaustive";
        w.search.tpCandidates = {1, 4};
        w.search.cpCandidates = {1, 2};
        w.search.allowEp = false;
        w.search.virtualStages = 3;
        w.search.layouts = {Layout::ReplicasInside};
        PinnedPlan pin;
        pin.label = "four stages";
        pin.planner = "nest";
        pin.plan.dp = 2;
        pin.plan.microBatch = 2;
        pin.plan.stages.push_back(StagePlan{{2, 1, 1, true, 1, Recompute::None}, 0, 3, {{0, 1}, {2, 3}}});
        pin.settings.microBatches = {2};
        pin.cluster = w.cluster;
        w.plans.push_back(pin);
        const Json j = workspaceToJson(w);
        QCOMPARE(j.at("format").get<std::string>(), std::string("nest-workspace"));
        // Through text, as on disk.
        auto back = workspaceFromJson(Json::parse(j.dump(2)), "mem");
        QVERIFY2(back.ok(), back.error().c_str());
        QVERIFY(back->cluster == w.cluster);
        QCOMPARE(back->cluster.deviceCount(), 24);  // 4 * 2 * 3
        QCOMPARE(back->model, w.model);
        QCOMPARE(back->search, w.search);
        QCOMPARE(back->plans.size(), size_t(1));
        QVERIFY(back->plans[0] == w.plans[0]);
    }

    void modelAsPresetString()
    {
        auto w = workspaceFromJson(Json{{"cluster", clusterJson()}, {"model", "llama2-7b"}}, "w");
        QVERIFY2(w.ok(), w.error().c_str());
        QCOMPARE(w->model, (Json{{"preset", "llama2-7b"}}));
    }

    void errors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("expected");  // substring of the message
        QTest::newRow("not an object") << "[1]" << "w.json: expected an object";
        QTest::newRow("no cluster") << R"({"format": "nest-workspace"})" << "cluster";
        QTest::newRow("unknown key") << R"({"cluster": CL, "modle": {}})" << "modle";
        QTest::newRow("bad format") << R"({"format": "other", "cluster": CL})" << "format";
        QTest::newRow("bad schedule")
            << R"({"cluster": CL, "search": {"schedules": ["1f1b", "zigzag"]}})" << "search.schedules[1]";
        QTest::newRow("bad micro-batch")
            << R"({"cluster": CL, "search": {"micro_batches": [0]}})" << "search.micro_batches[0]";
        QTest::newRow("headroom >= 1")
            << R"({"cluster": CL, "search": {"memory_headroom": 1.5}})" << "search.memory_headroom";
        QTest::newRow("plans not objects") << R"({"cluster": CL, "plans": [3]})" << "plans[0]";
        QTest::newRow("pinned plan without plan") << R"({"cluster": CL, "plans": [{"label": "x"}]})"
                                                 << "plans[0].plan";
        QTest::newRow("pinned plan incomplete")
            << R"({"cluster": CL, "plans": [{"plan": {"stages": 3}}]})" << "plans[0].plan.global_batch";
        QTest::newRow("pinned plan unknown key")
            << R"({"cluster": CL, "plans": [{"plan": {}, "lable": "x"}]})" << "plans[0].lable";
        QTest::newRow("bad planner") << R"({"cluster": CL, "search": {"planner": "magic"}})" << "search.planner";
        QTest::newRow("bad layout") << R"({"cluster": CL, "search": {"layouts": ["sideways"]}})"
                                    << "search.layouts[0]";
        QTest::newRow("duplicate tp") << R"({"cluster": CL, "search": {"tp_candidates": [2, 2]}})"
                                      << "search.tp_candidates[1]";
        QTest::newRow("model wrong type") << R"({"cluster": CL, "model": 7})" << "model";
        QTest::newRow("bad cluster inside")
            << R"({"cluster": {"template": "fat-tree", "params": {"racks": -1}}})" << "cluster";
    }

    void errors()
    {
        QFETCH(QString, text);
        QFETCH(QString, expected);
        std::string s = text.toStdString();
        const auto at = s.find("CL");
        if (at != std::string::npos)
            s.replace(at, 2, clusterJson().dump());
        auto w = workspaceFromJson(Json::parse(s), "w.json");
        QVERIFY(!w.ok());
        QVERIFY2(w.error().find("w.json") != std::string::npos, w.error().c_str());
        QVERIFY2(w.error().find(expected.toStdString()) != std::string::npos, w.error().c_str());
    }

    void looksLikeWorkspaceDistinguishesClusters()
    {
        QVERIFY(looksLikeWorkspace(Json{{"cluster", clusterJson()}}));
        QVERIFY(looksLikeWorkspace(Json{{"format", "nest-workspace"}}));
        QVERIFY(!looksLikeWorkspace(clusterJson()));
        QVERIFY(!looksLikeWorkspace(Json::array()));
    }

    void loadMissingFile()
    {
        auto w = loadWorkspace("/nonexistent/dir/x.nestws.json");
        QVERIFY(!w.ok());
        QVERIFY(w.error().find("/nonexistent/dir/x.nestws.json") != std::string::npos);
    }

    void quickstartSample()
    {
        auto w = loadWorkspace(kSamples + "quickstart.nestws.json");
        QVERIFY2(w.ok(), w.error().c_str());
        // rack0: 3 nodes x 8 H100, rack1: 4 nodes x 8 A100 (hand count from the file).
        QCOMPARE(w->cluster.deviceCount(), 3 * 8 + 4 * 8);
        QCOMPARE(w->cluster.levelCount(), 3);
        QCOMPARE(w->cluster.deviceTypes.size(), size_t(2));
        QCOMPARE(w->model.at("preset").get<std::string>(), std::string("llama2-7b"));
    }

    void everySampleLoads()
    {
        int count = 0;
        for (const auto &e : std::filesystem::directory_iterator(kSamples)) {
            const std::string name = e.path().string();
            if (name.size() < 12 || name.substr(name.size() - 12) != ".nestws.json")
                continue;
            auto w = loadWorkspace(name);
            QVERIFY2(w.ok(), w.error().c_str());
            QVERIFY(w->cluster.validate().empty());
            ++count;
        }
        QVERIFY(count >= 1);
    }
};

QTEST_APPLESS_MAIN(TestWorkspace)
#include "test_workspace.moc"
