// Planner behaviour: determinism (same inputs, same plan, bit for bit), cancellation within
// 100 ms on a large instance, monotone progress, the "nothing fits" message, search
// statistics, and option handling.
#include "ClusterTemplates.h"
#include "ExhaustivePlanner.h"
#include "ModelIO.h"
#include "NestPlanner.h"
#include "PlanSpace.h"

#include "../TestTiming.h"

#include <QtTest>

#include <chrono>
#include <thread>

using namespace nest;

class TestPlannerMisc : public QObject {
    Q_OBJECT
private slots:
    void determinism();
    void cancellation();
    void progressIsMonotone();
    void nothingFits();
    void optionsRestrictTheSpace();
    void planSpaceLayouts();
    void gpipeDominatedBy1F1B();
};

void TestPlannerMisc::determinism()
{
    const Topology topo = clusterPreset("paper-v100-16").value();
    const ModelProfile model = resolveModel("llama2-7b").value();
    SearchOptions o;
    o.microBatches = {1, 2};
    const PlanResult a = NestPlanner().plan(topo, model, o);
    const PlanResult b = NestPlanner().plan(topo, model, o);
    QVERIFY(a.found);
    QVERIFY(a.plan == b.plan);
    QCOMPARE(a.objective, b.objective);  // bit for bit
    QCOMPARE(a.stats.states, b.stats.states);
    QCOMPARE(a.stats.transitions, b.stats.transitions);
}

void TestPlannerMisc::cancellation()
{
    // A search that takes several seconds on this machine (GPT3-175B on 16384 GPUs).
    const Topology topo = makeCluster("paper-spineleaf", {{"devices", 16384}}).value();
    const ModelProfile model = resolveModel("gpt3-175b").value();
    const SearchOptions o;
    CancelToken token;
    std::chrono::steady_clock::time_point cancelledAt;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        cancelledAt = std::chrono::steady_clock::now();
        token.cancel();
    });
    const PlanResult r = NestPlanner().plan(topo, model, o, ProgressFn(), token);
    const auto returned = std::chrono::steady_clock::now();
    canceller.join();
    QVERIFY(r.cancelled);
    QVERIFY(!r.found);
    const double ms = std::chrono::duration<double, std::milli>(returned - cancelledAt).count();
    qDebug() << "returned" << ms << "ms after cancel";
    QVERIFY2(ms < 100 * testtiming::kTimingSlack, qPrintable(QString::number(ms)));

    // The exhaustive planner polls too.
    CancelToken t2;
    t2.cancel();
    const PlanResult e = ExhaustivePlanner().plan(topo, model, o, ProgressFn(), t2);
    QVERIFY(e.cancelled);
}

void TestPlannerMisc::progressIsMonotone()
{
    const Topology topo = clusterPreset("paper-v100-8").value();
    const ModelProfile model = resolveModel("bert-large").value();
    SearchOptions o;
    o.microBatches = {1, 2, 4};
    std::vector<double> fractions, bests;
    const PlanResult r = NestPlanner().plan(topo, model, o, [&](double f, double best) {
        fractions.push_back(f);
        bests.push_back(best);
    }, CancelToken());
    QVERIFY(r.found);
    QVERIFY(fractions.size() >= 2);
    for (size_t i = 1; i < fractions.size(); ++i) {
        QVERIFY(fractions[i] >= fractions[i - 1]);
        if (bests[i - 1] > 0)
            QVERIFY(bests[i] <= bests[i - 1] && bests[i] > 0);
    }
    QCOMPARE(fractions.back(), 1.0);
    QCOMPARE(bests.back(), r.objective);
}

void TestPlannerMisc::nothingFits()
{
    // GPT3-175B (350 GB of BF16 weights alone) cannot fit on 8 V100-32GB, whatever the plan:
    // 8 * 32 GB = 256 GB < 350 GB.
    const Topology topo = clusterPreset("paper-v100-8").value();
    const ModelProfile model = resolveModel("gpt3-175b").value();
    SearchOptions o;
    o.microBatches = {1};
    const PlanResult r = NestPlanner().plan(topo, model, o);
    QVERIFY(!r.found);
    QVERIFY2(r.message.find("nothing fits in memory") != std::string::npos, r.message.c_str());
    QVERIFY2(r.message.find("GB") != std::string::npos, r.message.c_str());
    QVERIFY(r.stats.pruned > 0);

    // Bad options: a batch no micro-batch divides.
    SearchOptions bad;
    bad.globalBatch = 7;
    bad.microBatches = {2, 4};
    const PlanResult b = NestPlanner().plan(topo, resolveModel("bert-large").value(), bad);
    QVERIFY(!b.found);
    QVERIFY2(b.message.find("global batch") != std::string::npos, b.message.c_str());
}

void TestPlannerMisc::optionsRestrictTheSpace()
{
    const Topology topo = clusterPreset("paper-v100-16").value();
    const ModelProfile model = resolveModel("llama2-7b").value();
    SearchOptions o;
    o.microBatches = {2};
    o.schedules = {Schedule::OneFOneB};
    o.allowZero = false;
    o.allowRecompute = false;
    o.tpCandidates = {2};
    o.maxStages = 4;
    const PlanResult r = NestPlanner().plan(topo, model, o);
    QVERIFY2(r.found, r.message.c_str());
    QCOMPARE(r.plan.microBatch, 2);
    QCOMPARE(r.plan.schedule, Schedule::OneFOneB);
    QVERIFY(r.plan.pipelineDepth() <= 4);
    for (const StagePlan &s : r.plan.stages) {
        QCOMPARE(s.zero, 0);
        QVERIFY(s.recompute == Recompute::None);
        QCOMPARE(s.tp, 2);
    }
    // Widening the space can only help.
    SearchOptions wide = o;
    wide.allowZero = true;
    wide.allowRecompute = true;
    wide.tpCandidates = {1, 2};
    const PlanResult w = NestPlanner().plan(topo, model, wide);
    QVERIFY(w.found);
    QVERIFY(w.objective <= r.objective * (1 + 1e-12));
}

void TestPlannerMisc::planSpaceLayouts()
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
    QVERIFY2(t.validate().empty(), t.validate().c_str());
    QCOMPARE(t.deviceCount(), 8);
    const ModelProfile model = resolveModel("bert-large").value();
    SearchOptions o;
    const PlanSpace space(t, model, o);
    OuterConfig c;
    c.dp = 2;
    c.positions = 4;
    c.layout = Layout::ReplicasOutside;
    // Stage at position 1 of width 2: replicas side by side at devices 2-3 and 4-5.
    QCOMPARE(space.stageDevices(c, 1, 2), (std::vector<std::vector<int>>{{2, 3}, {4, 5}}));
    c.layout = Layout::ReplicasInside;
    // Each replica a pipeline in its own block of 4: devices 1-2 and 5-6.
    QCOMPARE(space.stageDevices(c, 1, 2), (std::vector<std::vector<int>>{{1, 2}, {5, 6}}));
    // dp candidates divide the batch; dp = 1 has a single layout.
    for (const OuterConfig &k : space.configs()) {
        QCOMPARE(space.globalBatch() % (k.microBatch * k.dp), 0);
        QCOMPARE(k.positions, 8 / k.dp);
        QVERIFY(!(k.dp == 1 && k.layout == Layout::ReplicasInside));
    }
    // The planner works on this non-uniform tree and its value matches the evaluator.
    o.microBatches = {1, 2};
    const PlanResult r = NestPlanner().plan(t, model, o);
    QVERIFY2(r.found && r.verified, r.message.c_str());
}

void TestPlannerMisc::gpipeDominatedBy1F1B()
{
    // NEST skips a GPipe point when the 1F1B point with the same (mb, dp, layout) is in the
    // space: same plans, same times, never more stashed micro-batches. The optimum over
    // {1F1B, GPipe} must therefore equal the 1F1B optimum, and GPipe alone can never beat it.
    const Topology topo = clusterPreset("paper-spineleaf-64").value();
    const ModelProfile model = resolveModel("llama2-7b").value();
    SearchOptions o;
    o.globalBatch = 128;  // few micro-batches, so that GPipe's stash fits too
    o.microBatches = {1, 2};
    o.schedules = {Schedule::OneFOneB};
    const PlanResult one = NestPlanner().plan(topo, model, o);
    o.schedules = {Schedule::GPipe};
    const PlanResult gpipe = NestPlanner().plan(topo, model, o);
    o.schedules = {Schedule::OneFOneB, Schedule::GPipe};
    const PlanResult both = NestPlanner().plan(topo, model, o);
    QVERIFY2(one.found && gpipe.found && both.found, (one.message + gpipe.message).c_str());
    QVERIFY(one.verified && gpipe.verified && both.verified);
    QCOMPARE(both.objective, one.objective);
    QVERIFY(gpipe.objective >= one.objective);
    // Every GPipe point of the combined search was skipped, none searched.
    QCOMPARE(both.stats.configs, one.stats.configs);
    QCOMPARE(both.stats.configs + both.stats.configsSkipped,
             2 * (one.stats.configs + one.stats.configsSkipped));
}

QTEST_APPLESS_MAIN(TestPlannerMisc)
#include "test_planner_misc.moc"
