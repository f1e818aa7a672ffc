// Workspace files: round trip, defaults, error messages with JSON paths, the shipped samples.
#include "SourceDir.h"
#include "ClusterTemplates.h"
#include "Workspace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

TEST(Workspace, defaultsWhenOnlyClusterGiven)
{
    auto w = workspaceFromJson(Json{{"cluster", clusterJson()}}, "w.json");
    ASSERT_TRUE(w.ok()) << w.error().c_str();
    ASSERT_EQ(w->cluster.deviceCount(), 8);  // 2 * 2 * 2
    ASSERT_TRUE(w->model.toJson().is_object() && w->model.toJson().empty());
    ASSERT_TRUE(w->plans.empty());
    ASSERT_EQ(w->search, SearchSettings{});
    ASSERT_EQ(w->search.microBatches, (std::vector<int>{1, 2, 4, 8}));
}

TEST(Workspace, roundTrip)
{
    Workspace w;
    auto t = makeCluster("spine-leaf", {{"devices_per_node", 4}, {"nodes_per_leaf", 2}, {"leaves", 3}});
    ASSERT_TRUE(t.ok()) << t.error().c_str();
    w.cluster = *t;
    w.model = ModelSource(Json{{"preset", "gpt3-35b"}, {"seq_length", 1024}});
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
    ASSERT_EQ(j.at("format").get<std::string>(), std::string("nest-workspace"));
    // Through text, as on disk.
    auto back = workspaceFromJson(Json::parse(j.dump(2)), "mem");
    ASSERT_TRUE(back.ok()) << back.error().c_str();
    ASSERT_TRUE(back->cluster == w.cluster);
    ASSERT_EQ(back->cluster.deviceCount(), 24);  // 4 * 2 * 3
    ASSERT_EQ(back->model.toJson(), w.model.toJson());
    ASSERT_EQ(back->search, w.search);
    ASSERT_EQ(back->plans.size(), size_t(1));
    ASSERT_TRUE(back->plans[0] == w.plans[0]);
}

TEST(Workspace, modelAsPresetString)
{
    auto w = workspaceFromJson(Json{{"cluster", clusterJson()}, {"model", "llama2-7b"}}, "w");
    ASSERT_TRUE(w.ok()) << w.error().c_str();
    ASSERT_EQ(w->model.toJson(), (Json{{"preset", "llama2-7b"}}));
}

TEST(Workspace, errors)
{
    struct Row {
        const char *name;
        std::string text;
        std::string expected;  // substring of the message
    };
    const Row rows[] = {
        {"not an object", "[1]", "w.json: expected an object"},
        {"no cluster", R"({"format": "nest-workspace"})", "cluster"},
        {"unknown key", R"({"cluster": CL, "modle": {}})", "modle"},
        {"bad format", R"({"format": "other", "cluster": CL})", "format"},
        {"bad schedule", R"({"cluster": CL, "search": {"schedules": ["1f1b", "zigzag"]}})", "search.schedules[1]"},
        {"bad micro-batch", R"({"cluster": CL, "search": {"micro_batches": [0]}})", "search.micro_batches[0]"},
        {"headroom >= 1", R"({"cluster": CL, "search": {"memory_headroom": 1.5}})", "search.memory_headroom"},
        {"plans not objects", R"({"cluster": CL, "plans": [3]})", "plans[0]"},
        {"pinned plan without plan", R"({"cluster": CL, "plans": [{"label": "x"}]})", "plans[0].plan"},
        {"pinned plan incomplete", R"({"cluster": CL, "plans": [{"plan": {"stages": 3}}]})", "plans[0].plan.global_batch"},
        {"pinned plan unknown key", R"({"cluster": CL, "plans": [{"plan": {}, "lable": "x"}]})", "plans[0].lable"},
        {"bad planner", R"({"cluster": CL, "search": {"planner": "magic"}})", "search.planner"},
        {"bad layout", R"({"cluster": CL, "search": {"layouts": ["sideways"]}})", "search.layouts[0]"},
        {"duplicate tp", R"({"cluster": CL, "search": {"tp_candidates": [2, 2]}})", "search.tp_candidates[1]"},
        {"model wrong type", R"({"cluster": CL, "model": 7})", "model"},
        {"bad cluster inside", R"({"cluster": {"template": "fat-tree", "params": {"racks": -1}}})", "cluster"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            std::string s = row.text;
            const auto at = s.find("CL");
            if (at != std::string::npos)
                s.replace(at, 2, clusterJson().dump());
            auto w = workspaceFromJson(Json::parse(s), "w.json");
            ASSERT_TRUE(!w.ok());
            ASSERT_TRUE(w.error().find("w.json") != std::string::npos) << w.error().c_str();
            ASSERT_TRUE(w.error().find(row.expected) != std::string::npos) << w.error().c_str();
        }();
    }
}

TEST(Workspace, looksLikeWorkspaceDistinguishesClusters)
{
    ASSERT_TRUE(looksLikeWorkspace(Json{{"cluster", clusterJson()}}));
    ASSERT_TRUE(looksLikeWorkspace(Json{{"format", "nest-workspace"}}));
    ASSERT_TRUE(!looksLikeWorkspace(clusterJson()));
    ASSERT_TRUE(!looksLikeWorkspace(Json::array()));
}

TEST(Workspace, loadMissingFile)
{
    auto w = loadWorkspace("/nonexistent/dir/x.nestws.json");
    ASSERT_TRUE(!w.ok());
    ASSERT_TRUE(w.error().find("/nonexistent/dir/x.nestws.json") != std::string::npos);
}

TEST(Workspace, quickstartSample)
{
    auto w = loadWorkspace(kSamples + "quickstart.nestws.json");
    ASSERT_TRUE(w.ok()) << w.error().c_str();
    // rack0: 3 nodes x 8 H100, rack1: 4 nodes x 8 A100 (hand count from the file).
    ASSERT_EQ(w->cluster.deviceCount(), 3 * 8 + 4 * 8);
    ASSERT_EQ(w->cluster.levelCount(), 3);
    ASSERT_EQ(w->cluster.deviceTypes.size(), size_t(2));
    ASSERT_EQ(w->model.toJson().at("preset").get<std::string>(), std::string("llama2-7b"));
}

TEST(Workspace, everySampleLoads)
{
    int count = 0;
    for (const auto &e : std::filesystem::directory_iterator(kSamples)) {
        const std::string name = e.path().string();
        if (name.size() < 12 || name.substr(name.size() - 12) != ".nestws.json")
            continue;
        auto w = loadWorkspace(name);
        ASSERT_TRUE(w.ok()) << w.error().c_str();
        ASSERT_TRUE(w->cluster.validate().empty());
        ++count;
    }
    ASSERT_TRUE(count >= 1);
}

// Issue 25, point 8: a pinned plan's own model must load, and its label has a bound.
namespace {
Json pinnedPlanJson()
{
    // One stage over 2 of the 8 devices, bert-large's 24 blocks + embedding + head.
    return Json{{"global_batch", 8}, {"micro_batch", 1}, {"seq_length", 512}, {"dp", 1},
                {"stages", Json::array({Json{{"first_layer", 0}, {"end_layer", 26}, {"tp", 2}, {"devices", {{0, 1}}}}})}};
}
} // namespace

TEST(Workspace, pinnedModelsMustLoad)
{
    struct Row {
        const char *name;
        Json model;
        std::string expected;
    };
    const Row rows[] = {
        {"unknown preset", Json{{"preset", "no-such-model"}}, "w.json: at plans[0].model"},
        {"unknown preset by name", Json("gpt-9000"), "w.json: at plans[0].model"},
        {"bad hyperparameter", Json{{"preset", "bert-large"}, {"hidden", -4}}, "w.json: at plans[0].model.hidden"},
        {"empty profile", Json{{"format", "nest-profile"}, {"layers", Json::array()}}, "w.json: at plans[0].model"},
    };
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        Json pin{{"label", "p"}, {"plan", pinnedPlanJson()}, {"model", row.model}};
        const Json ws{{"cluster", clusterJson()}, {"plans", Json::array({pin})}};
        const auto w = workspaceFromJson(ws, "w.json");
        ASSERT_FALSE(w.ok());
        EXPECT_NE(w.error().find(row.expected), std::string::npos) << w.error();
    }
    // A pin whose model loads is kept with it.
    Json pin{{"label", "p"}, {"plan", pinnedPlanJson()}, {"model", Json{{"preset", "bert-large"}}}};
    const auto w = workspaceFromJson(Json{{"cluster", clusterJson()}, {"plans", Json::array({pin})}}, "w.json");
    ASSERT_TRUE(w.ok()) << w.error();
    ASSERT_EQ(w->plans.size(), 1u);
    ASSERT_TRUE(w->plans[0].model.has_value());
    EXPECT_TRUE(w->plans[0].model->isPreset());
}

TEST(Workspace, pinLabelsAreBounded)
{
    // 5,000,000 characters took the window 66 s and 1.6 GB to open (issue 25).
    for (const size_t length : {size_t(1000), size_t(1001), size_t(5000000)}) {
        SCOPED_TRACE(length);
        Json pin{{"label", std::string(length, 'x')}, {"plan", pinnedPlanJson()}};
        const auto w = workspaceFromJson(Json{{"cluster", clusterJson()}, {"plans", Json::array({pin})}}, "w.json");
        if (length <= 1000) {
            ASSERT_TRUE(w.ok()) << w.error();
            EXPECT_EQ(w->plans[0].label.size(), length);
        } else {
            ASSERT_FALSE(w.ok());
            EXPECT_NE(w.error().find("w.json: at plans[0].label: must be at most 1000 characters, found " +
                                     std::to_string(length)),
                      std::string::npos)
                << w.error().substr(0, 300);
        }
    }
}

TEST(Workspace, searchListDuplicatesAreFoundInOnePass)
{
    // 65,536 distinct micro-batch sizes (the whole range) load; one more value repeats one.
    Json list = Json::array();
    for (int i = 1; i <= 65536; ++i)
        list.push_back(i);
    const auto ok = workspaceFromJson(Json{{"cluster", clusterJson()}, {"search", {{"micro_batches", list}}}}, "w.json");
    ASSERT_TRUE(ok.ok()) << ok.error();
    EXPECT_EQ(ok->search.microBatches.size(), 65536u);
    list.push_back(77);
    const auto dup = workspaceFromJson(Json{{"cluster", clusterJson()}, {"search", {{"micro_batches", list}}}}, "w.json");
    ASSERT_FALSE(dup.ok());
    EXPECT_NE(dup.error().find("w.json: at search.micro_batches[65536]: duplicate value 77"), std::string::npos)
        << dup.error();
    // The micro-batch range is the CLI's (1 .. 65,536), not 2^20.
    const auto big = workspaceFromJson(Json{{"cluster", clusterJson()}, {"search", {{"micro_batches", {1, 65537}}}}}, "w.json");
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.error().find("search.micro_batches[1]"), std::string::npos) << big.error();
}
