// Planner behaviour: determinism (same inputs, same plan, bit for bit), cancellation within
// 100 ms on a large instance, monotone progress, the "nothing fits" message, search
// statistics, and option handling.
#include "Fixtures.h"
#include "ClusterTemplates.h"
#include "ExhaustivePlanner.h"
#include "ModelIO.h"
#include "NestPlanner.h"
#include "PlanSpace.h"

#include "../TestTiming.h"

#include "CoreTestSupport.h"

#include <chrono>
#include <iostream>

using namespace nest;

namespace {

// Llama 2 7B on the paper's 16 V100s, micro-batches 1 and 2: a search of many outer points
// that takes a few milliseconds.
struct SmallSearch {
    Topology topo = fixtures::cluster("paper-v100-16");
    ModelProfile model = fixtures::model("llama2-7b");
    SearchOptions options = [] {
        SearchOptions o;
        o.microBatches = {1, 2};
        return o;
    }();
};

} // namespace

TEST(PlannerMisc, determinism)
{
    const SmallSearch in;
    const PlanResult a = NestPlanner().plan(in.topo, in.model, in.options);
    const PlanResult b = NestPlanner().plan(in.topo, in.model, in.options);
    ASSERT_TRUE(a.found);
    ASSERT_TRUE(a.plan == b.plan);
    ASSERT_QFUZZY_EQ(a.objective, b.objective);  // bit for bit
    ASSERT_EQ(a.stats.states, b.stats.states);
    ASSERT_EQ(a.stats.transitions, b.stats.transitions);
}

namespace {

// GPT3-175B on 16384 GPUs (a search of ~0.1-0.5 s here), cancelled from inside the search at
// its first progress report (any earlier than half-way): the planner must return within
// 100 ms of that. Cancelling at a fixed time raced the search once the planner became
// faster than the delay.
void expectPromptCancel(const SearchOptions &o, const char *what)
{
    const Topology topo = makeCluster("paper-spineleaf", {{"devices", 16384}}).value();
    const ModelProfile model = fixtures::model("gpt3-175b");
    CancelToken token;
    std::chrono::steady_clock::time_point cancelledAt;
    bool cancelled = false;
    const ProgressFn cancelEarly = [&](double fraction, double) {
        if (!cancelled && fraction < 0.5) {
            cancelled = true;
            cancelledAt = std::chrono::steady_clock::now();
            token.cancel();
        }
    };
    const PlanResult r = NestPlanner().plan(topo, model, o, cancelEarly, token);
    const auto returned = std::chrono::steady_clock::now();
    ASSERT_TRUE(cancelled) << what;
    ASSERT_TRUE(r.cancelled) << what;
    ASSERT_TRUE(!r.found) << what;
    const double ms = std::chrono::duration<double, std::milli>(returned - cancelledAt).count();
    std::cerr << what << " returned " << ms << " ms after cancel\n";
    ASSERT_TRUE(ms < 100 * testtiming::kTimingSlack) << what << ": " << ms;
}

} // namespace

TEST(PlannerMisc, cancellation)
{
    expectPromptCancel(SearchOptions(), "one search");

    // The exhaustive planner polls too.
    const Topology topo = makeCluster("paper-spineleaf", {{"devices", 16384}}).value();
    CancelToken t2;
    t2.cancel();
    const PlanResult e = ExhaustivePlanner().plan(topo, fixtures::model("gpt3-175b"), SearchOptions(),
                                                  ProgressFn(), t2);
    ASSERT_TRUE(e.cancelled);
}

// SearchOptions::threads: the outer points dealt to two searches give the one-search plan
// (test_planner_deep checks it on many instances with ties); here under ThreadSanitizer
// too (make test-tsan), and a cancellation from the progress callback stops both searches.
TEST(PlannerMisc, threadsGiveTheSamePlanAndStopOnCancel)
{
    SmallSearch in;
    const PlanResult one = NestPlanner().plan(in.topo, in.model, in.options);
    in.options.threads = 2;
    const PlanResult two = NestPlanner().plan(in.topo, in.model, in.options);
    ASSERT_TRUE(one.found);
    ASSERT_TRUE(two.found);
    ASSERT_TRUE(two.plan == one.plan);
    ASSERT_EQ(two.objective, one.objective);
    ASSERT_GT(two.stats.configs, 1);

    SearchOptions twoSearches;
    twoSearches.threads = 2;
    expectPromptCancel(twoSearches, "two searches");
}

TEST(PlannerMisc, progressIsMonotone)
{
    const Topology topo = fixtures::cluster("paper-v100-8");
    const ModelProfile model = fixtures::model("bert-large");
    SearchOptions o;
    o.microBatches = {1, 2, 4};
    std::vector<double> fractions, bests;
    const PlanResult r = NestPlanner().plan(topo, model, o, [&](double f, double best) {
        fractions.push_back(f);
        bests.push_back(best);
    }, CancelToken());
    ASSERT_TRUE(r.found);
    ASSERT_TRUE(fractions.size() >= 2);
    for (size_t i = 1; i < fractions.size(); ++i) {
        ASSERT_TRUE(fractions[i] >= fractions[i - 1]);
        if (bests[i - 1] > 0) {
            ASSERT_TRUE(bests[i] <= bests[i - 1] && bests[i] > 0);
        }
    }
    ASSERT_QFUZZY_EQ(fractions.back(), 1.0);
    ASSERT_QFUZZY_EQ(bests.back(), r.objective);
}

TEST(PlannerMisc, nothingFits)
{
    // GPT3-175B (350 GB of BF16 weights alone) cannot fit on 8 V100-32GB, whatever the plan:
    // 8 * 32 GB = 256 GB < 350 GB.
    const Topology topo = fixtures::cluster("paper-v100-8");
    const ModelProfile model = fixtures::model("gpt3-175b");
    SearchOptions o;
    o.microBatches = {1};
    const PlanResult r = NestPlanner().plan(topo, model, o);
    ASSERT_TRUE(!r.found);
    ASSERT_TRUE(r.message.find("nothing fits in memory") != std::string::npos) << r.message.c_str();
    ASSERT_TRUE(r.message.find("GB") != std::string::npos) << r.message.c_str();
    // Said before any table is built (issue 48: the whole cluster cannot hold the model's
    // state, so no search runs; 25,000 layers took 4.4 GB of tables to say so).
    ASSERT_TRUE(r.message.find("whatever the plan") != std::string::npos) << r.message.c_str();
    ASSERT_EQ(r.stats.pruned, 0);
    // Two searches (SearchOptions::threads) report the same closest miss.
    o.threads = 2;
    const PlanResult r2 = NestPlanner().plan(topo, model, o);
    ASSERT_FALSE(r2.found);
    ASSERT_EQ(r2.message, r.message);

    // Bad options: a batch no micro-batch divides.
    SearchOptions bad;
    bad.globalBatch = 7;
    bad.microBatches = {2, 4};
    const PlanResult b = NestPlanner().plan(topo, fixtures::model("bert-large"), bad);
    ASSERT_TRUE(!b.found);
    ASSERT_TRUE(b.message.find("global batch") != std::string::npos) << b.message.c_str();
}

TEST(PlannerMisc, optionsRestrictTheSpace)
{
    const Topology topo = fixtures::cluster("paper-v100-16");
    const ModelProfile model = fixtures::model("llama2-7b");
    SearchOptions o;
    o.microBatches = {2};
    o.schedules = {Schedule::OneFOneB};
    o.allowZero = false;
    o.allowRecompute = false;
    o.tpCandidates = {2};
    o.maxStages = 4;
    const PlanResult r = NestPlanner().plan(topo, model, o);
    ASSERT_TRUE(r.found) << r.message.c_str();
    ASSERT_EQ(r.plan.microBatch, 2);
    ASSERT_EQ(r.plan.schedule, Schedule::OneFOneB);
    ASSERT_TRUE(r.plan.pipelineDepth() <= 4);
    for (const StagePlan &s : r.plan.stages) {
        ASSERT_EQ(s.zero, 0);
        ASSERT_TRUE(s.recompute == Recompute::None);
        ASSERT_EQ(s.tp, 2);
    }
    // Widening the space can only help.
    SearchOptions wide = o;
    wide.allowZero = true;
    wide.allowRecompute = true;
    wide.tpCandidates = {1, 2};
    const PlanResult w = NestPlanner().plan(topo, model, wide);
    ASSERT_TRUE(w.found);
    ASSERT_TRUE(w.objective <= r.objective * (1 + 1e-12));
}

TEST(PlannerMisc, planSpaceLayouts)
{
    // 2 racks of different sizes: 3 nodes x 2 devices and 1 node x 2 devices = 8 devices.
    Topology t;
    t.deviceTypes.push_back(devicePreset("v100-32gb").value());
    t.levels = {{"node", {300e9, 1e-6, 1}}, {"rack", {25e9, 5e-6, 1}}, {"root", {12.5e9, 1e-5, 2}}};
    t.groups.resize(7);
    t.groups[0] = {"root", 2, -1, {1, 2}, {}, 0, {}};
    t.groups[1] = {"rack0", 1, 0, {3, 4, 5}, {}, 0, {}};
    t.groups[2] = {"rack1", 1, 0, {6}, {}, 0, {}};
    for (int g = 3; g < 7; ++g)
        t.groups[g] = {"node", 0, g < 6 ? 1 : 2, {}, {0, 0}, 0, {}};
    t.root = 0;
    t.reindex();
    ASSERT_TRUE(t.validate().empty()) << t.validate().c_str();
    ASSERT_EQ(t.deviceCount(), 8);
    const ModelProfile model = fixtures::model("bert-large");
    SearchOptions o;
    const PlanSpace space(t, model, o);
    OuterConfig c;
    c.dp = 2;
    c.positions = 4;
    c.layout = Layout::ReplicasOutside;
    // Stage at position 1 of width 2: replicas side by side at devices 2-3 and 4-5.
    ASSERT_EQ(space.stageDevices(c, 1, 2), (std::vector<std::vector<int>>{{2, 3}, {4, 5}}));
    c.layout = Layout::ReplicasInside;
    // Each replica a pipeline in its own block of 4: devices 1-2 and 5-6.
    ASSERT_EQ(space.stageDevices(c, 1, 2), (std::vector<std::vector<int>>{{1, 2}, {5, 6}}));
    // dp candidates divide the batch; dp = 1 has a single layout.
    for (const OuterConfig &k : space.configs()) {
        ASSERT_EQ(space.globalBatch() % (k.microBatch * k.dp), 0);
        ASSERT_EQ(k.positions, 8 / k.dp);
        ASSERT_TRUE(!(k.dp == 1 && k.layout == Layout::ReplicasInside));
    }
    // The planner works on this non-uniform tree and its value matches the evaluator.
    o.microBatches = {1, 2};
    const PlanResult r = NestPlanner().plan(t, model, o);
    ASSERT_TRUE(r.found && r.verified) << r.message.c_str();
}

TEST(PlannerMisc, gpipeDominatedBy1F1B)
{
    // NEST skips a GPipe point when the 1F1B point with the same (mb, dp, layout) is in the
    // space: same plans, same times, never more stashed micro-batches. The optimum over
    // {1F1B, GPipe} must therefore equal the 1F1B optimum, and GPipe alone can never beat it.
    const Topology topo = fixtures::cluster("paper-spineleaf-64");
    const ModelProfile model = fixtures::model("llama2-7b");
    SearchOptions o;
    o.globalBatch = 128;  // few micro-batches, so that GPipe's stash fits too
    o.microBatches = {1, 2};
    o.schedules = {Schedule::OneFOneB};
    const PlanResult one = NestPlanner().plan(topo, model, o);
    o.schedules = {Schedule::GPipe};
    const PlanResult gpipe = NestPlanner().plan(topo, model, o);
    o.schedules = {Schedule::OneFOneB, Schedule::GPipe};
    const PlanResult both = NestPlanner().plan(topo, model, o);
    ASSERT_TRUE(one.found && gpipe.found && both.found) << (one.message + gpipe.message).c_str();
    ASSERT_TRUE(one.verified && gpipe.verified && both.verified);
    ASSERT_QFUZZY_EQ(both.objective, one.objective);
    ASSERT_TRUE(gpipe.objective >= one.objective);
    // Every GPipe point of the combined search was skipped, none searched.
    ASSERT_EQ(both.stats.configs, one.stats.configs);
    ASSERT_EQ(both.stats.configs + both.stats.configsSkipped, 2 * (one.stats.configs + one.stats.configsSkipped));
}

