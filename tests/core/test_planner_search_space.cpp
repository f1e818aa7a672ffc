// The search space of issue 10 (item 4): context-parallel degrees, interleaving depths beyond
// 2 and the three recompute modes.
//  - the candidate lists after the model's constraints (cp: divides the sequence and, for the
//    default list, at least 4096 tokens per rank; depths >= 2; recompute modes);
//  - every (pp, depth) pair the interleaved sub-space offers, derived here from its rule;
//  - the interleaved plans of the space are exactly buildUniformPlan's (the Megatron-LM
//    layouts published runs use: same cuts, devices and options), so a published
//    interleaved layout is always one of the candidates;
//  - NEST equals the exhaustive optimum on seeded small instances with cp, depth 3 and
//    selective recompute in the space (and the optima really use them);
//  - at a 131072-token sequence NEST with the default lists returns a context-parallel plan,
//    at least as fast as the best plan without context parallelism and at least 2x faster
//    (both values are planner optima, checked against evaluate()).
#include "ClusterTemplates.h"
#include "ExhaustivePlanner.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "NestPlanner.h"
#include "PlanBuilder.h"
#include "PlanSpace.h"

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

using namespace nest;

namespace {

ModelProfile gptWithBlocks(int blocks, int seq = 1024, int hidden = 256, int globalBatch = 16)
{
    ModelConfig c = familyDefaults("gpt");
    c.name = "gpt-" + std::to_string(blocks);
    c.layers = blocks;
    c.hidden = hidden;
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 4 * hidden;
    c.vocab = 2000;
    c.seqLength = seq;
    c.maxPositions = seq;
    c.globalBatch = globalBatch;
    return buildProfile(c);
}

Topology fatTree(int devicesPerNode, int nodesPerRack, int racks)
{
    return makeCluster("fat-tree", {{"devices_per_node", devicesPerNode},
                                    {"nodes_per_rack", nodesPerRack},
                                    {"racks", racks}})
        .value();
}

bool usesCp(const Plan &p)
{
    return std::any_of(p.stages.begin(), p.stages.end(), [](const StagePlan &s) { return s.cp > 1; });
}

} // namespace

class TestPlannerSearchSpace : public QObject {
    Q_OBJECT
private slots:
    void cpDegrees_data();
    void cpDegrees();
    void recomputeModesAndDepths();
    void interleavedPairs();
    void interleavedPlansAreUniformPlans_data();
    void interleavedPlansAreUniformPlans();
    void nestEqualsExhaustive_data();
    void nestEqualsExhaustive();
    void coverage();
    void longSequenceNeedsContextParallelism_data();
    void longSequenceNeedsContextParallelism();

private:
    int m_found = 0, m_selective = 0, m_full = 0, m_cp = 0, m_depth3 = 0, m_interleaved = 0;
};

void TestPlannerSearchSpace::cpDegrees_data()
{
    QTest::addColumn<int>("seq");
    QTest::addColumn<QList<int>>("candidates");  // empty = the default list
    QTest::addColumn<int>("minTokens");          // -1 = the default threshold
    QTest::addColumn<QList<int>>("expected");
    // The default list: a cp > 1 only when seq / cp >= 4096.
    QTest::newRow("2048, defaults") << 2048 << QList<int>{} << -1 << QList<int>{1};
    QTest::newRow("8192, defaults") << 8192 << QList<int>{} << -1 << QList<int>{1, 2};
    QTest::newRow("12288, defaults") << 12288 << QList<int>{} << -1 << QList<int>{1, 2};  // 12288/4 = 3072
    QTest::newRow("32768, defaults") << 32768 << QList<int>{} << -1 << QList<int>{1, 2, 4, 8};
    QTest::newRow("131072, defaults") << 131072 << QList<int>{} << -1 << QList<int>{1, 2, 4, 8, 16};
    // An explicit list (threshold 0) is taken as given, subject to seq % cp == 0.
    QTest::newRow("2048, list as given") << 2048 << QList<int>{1, 2, 4, 8, 16} << 0 << QList<int>{1, 2, 4, 8, 16};
    QTest::newRow("4100, divisors only") << 4100 << QList<int>{1, 2, 4, 8, 16} << 0 << QList<int>{1, 2, 4};
    QTest::newRow("unsorted, repeated") << 1024 << QList<int>{4, 2, 4} << 0 << QList<int>{2, 4};
    QTest::newRow("own threshold") << 8192 << QList<int>{1, 2, 4} << 2048 << QList<int>{1, 2, 4};
    QTest::newRow("own threshold cuts") << 8192 << QList<int>{1, 2, 4} << 2049 << QList<int>{1, 2};
}

void TestPlannerSearchSpace::cpDegrees()
{
    QFETCH(int, seq);
    QFETCH(QList<int>, candidates);
    QFETCH(int, minTokens);
    QFETCH(QList<int>, expected);
    const ModelProfile model = gptWithBlocks(2, seq);
    const Topology topo = fatTree(8, 2, 1);
    SearchOptions o;
    if (!candidates.isEmpty())
        o.cpCandidates.assign(candidates.begin(), candidates.end());
    if (minTokens >= 0)
        o.cpMinTokensPerRank = minTokens;
    const PlanSpace space(topo, model, o);
    QVERIFY2(space.problem().empty(), space.problem().c_str());
    QCOMPARE(space.cpDegrees(), std::vector<int>(expected.begin(), expected.end()));
    // Exactly these degrees reach the stage options.
    std::set<int> offered;
    for (const OuterConfig &cfg : space.configs())
        for (int w : space.widths())
            if (w <= cfg.positions)
                for (const StageConfig &opt : space.stageOptions(cfg, w, 0, model.layerCount()))
                    offered.insert(opt.cp);
    QCOMPARE(std::vector<int>(offered.begin(), offered.end()), std::vector<int>(expected.begin(), expected.end()));
}

void TestPlannerSearchSpace::recomputeModesAndDepths()
{
    const ModelProfile model = gptWithBlocks(4);
    const Topology topo = fatTree(4, 1, 1);
    // The modes the stage options offer (and the space reports the same list).
    const auto modesOf = [&](const SearchOptions &o) {
        const PlanSpace space(topo, model, o);
        std::set<Recompute> seen;
        for (const StageConfig &opt : space.stageOptions(space.configs().front(), 1, 0, 1))
            seen.insert(opt.recompute);
        const std::vector<Recompute> offered(seen.begin(), seen.end());
        return offered == space.recomputeModes() ? offered : std::vector<Recompute>{};
    };
    SearchOptions o;
    QCOMPARE(modesOf(o), (std::vector<Recompute>{Recompute::None, Recompute::Selective, Recompute::Full}));
    o.recomputeModes = {Recompute::Full, Recompute::Selective};
    QCOMPARE(modesOf(o), (std::vector<Recompute>{Recompute::Selective, Recompute::Full}));
    o.allowRecompute = false;  // off means none, whatever the list
    QCOMPARE(modesOf(o), (std::vector<Recompute>{Recompute::None}));

    SearchOptions d;
    QCOMPARE(PlanSpace(topo, model, d).interleavingDepths(), (std::vector<int>{2, 3, 4}));
    d.virtualStages = {5, 1, 3, 3, 0};  // 1 and 0 are not interleaving depths
    QCOMPARE(PlanSpace(topo, model, d).interleavingDepths(), (std::vector<int>{3, 5}));
}

void TestPlannerSearchSpace::interleavedPairs()
{
    // 12 blocks, 8 devices, global batch 24: every (pp, v) with pp >= 2, pp * v <= 12 blocks,
    // m % pp == 0, pp <= maxStages and pp * width <= positions, for every depth listed.
    const ModelProfile model = gptWithBlocks(12, 1024, 256, 24);
    const Topology topo = fatTree(4, 2, 1);
    SearchOptions o;
    o.schedules = {Schedule::Interleaved};
    o.virtualStages = {2, 3, 4, 6, 7};
    o.maxStages = 5;
    o.tpCandidates = {1, 2};
    o.cpCandidates = {1};
    o.allowZero = false;
    o.allowRecompute = false;
    const PlanSpace space(topo, model, o);
    QVERIFY(!space.configs().empty());
    int checked = 0;
    for (const OuterConfig &cfg : space.configs()) {
        std::set<std::tuple<int, int, int>> got, want;
        for (const InterleavedChoice &c : space.interleavedChoices(cfg))
            got.insert({c.pp, c.virtualStages, c.option.width()});
        for (int pp = 2; pp <= 5; ++pp)
            for (int v : {2, 3, 4, 6, 7})
                for (int w : {1, 2})
                    if (pp * v <= 12 && cfg.numMicroBatches % pp == 0 && pp * w <= cfg.positions)
                        want.insert({pp, v, w});
        QCOMPARE(got, want);
        checked += static_cast<int>(want.size());
        // Every candidate's plan is well formed and has pp * v chunks of its depth.
        for (const InterleavedChoice &c : space.interleavedChoices(cfg)) {
            const Plan p = space.makeInterleavedPlan(cfg, c);
            QCOMPARE(p.virtualStages, c.virtualStages);
            QCOMPARE(static_cast<int>(p.stages.size()), c.pp * c.virtualStages);
            QVERIFY(planErrors(p, topo, model).empty());
        }
    }
    QVERIFY(checked > 20);  // depths 2, 3, 4 and 6 all occur (7 never fits 12 blocks twice)
}

void TestPlannerSearchSpace::interleavedPlansAreUniformPlans_data()
{
    QTest::addColumn<int>("blocks");
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("v");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("cp");
    QTest::addColumn<int>("dp");
    QTest::newRow("12 blocks, pp 2 x 3") << 12 << 2 << 3 << 1 << 1 << 2;
    QTest::newRow("13 blocks, pp 2 x 3 (uneven)") << 13 << 2 << 3 << 2 << 1 << 1;
    QTest::newRow("14 blocks, pp 4 x 3 (uneven)") << 14 << 4 << 3 << 1 << 2 << 2;
    QTest::newRow("80 blocks, pp 4 x 5, tp 4, cp 2") << 80 << 4 << 5 << 4 << 2 << 2;   // NeMo Llama-3.1 70B
    QTest::newRow("126 blocks, pp 9 x 7, tp 2") << 126 << 9 << 7 << 2 << 1 << 1;        // NeMo Llama-3.1 405B
    QTest::newRow("96 blocks, pp 8 x 12, tp 2, dp 2") << 96 << 8 << 12 << 2 << 1 << 2;  // NeMo GPT-3 175B
    QTest::newRow("100 blocks, pp 8 x 4") << 100 << 8 << 4 << 1 << 1 << 2;
}

void TestPlannerSearchSpace::interleavedPlansAreUniformPlans()
{
    QFETCH(int, blocks);
    QFETCH(int, pp);
    QFETCH(int, v);
    QFETCH(int, tp);
    QFETCH(int, cp);
    QFETCH(int, dp);
    const int m = 2 * pp;
    const ModelProfile model = gptWithBlocks(blocks, 1024, 256, m * dp);
    const Topology topo = fatTree(tp * cp, dp * pp, 1);
    QCOMPARE(topo.deviceCount(), tp * cp * dp * pp);

    SearchOptions o;
    o.schedules = {Schedule::Interleaved};
    o.microBatches = {1};
    o.dpCandidates = {dp};
    o.layouts = {Layout::ReplicasOutside};
    o.virtualStages = {v};
    o.tpCandidates = {tp};
    o.cpCandidates = {cp};
    o.cpMinTokensPerRank = 0;
    o.maxStages = pp;
    const PlanSpace space(topo, model, o);
    QVERIFY2(space.problem().empty(), space.problem().c_str());
    QCOMPARE(static_cast<int>(space.configs().size()), 1);
    const OuterConfig &cfg = space.configs().front();
    int matched = 0;
    for (const InterleavedChoice &c : space.interleavedChoices(cfg)) {
        if (c.pp != pp || c.option.width() != tp * cp)
            continue;
        UniformLayout u;
        u.tp = tp;
        u.cp = cp;
        u.pp = pp;
        u.dp = dp;
        u.sp = c.option.sp;
        u.zero = c.option.zero;
        u.recompute = c.option.recompute;
        u.microBatch = 1;
        u.globalBatch = model.globalBatch;
        u.seqLength = model.seqLength;
        u.schedule = Schedule::Interleaved;
        u.virtualStages = v;
        const auto uniform = buildUniformPlan(u, topo, model);
        QVERIFY2(uniform.ok(), uniform.error().c_str());
        const Plan mine = space.makeInterleavedPlan(cfg, c);
        QCOMPARE(mine.stages.size(), uniform->stages.size());
        for (size_t k = 0; k < mine.stages.size(); ++k) {
            const StagePlan &a = mine.stages[k], &b = uniform->stages[k];
            QVERIFY2(a == b, qPrintable(QString("chunk %1: layers %2-%3 vs %4-%5").arg(k).arg(a.firstLayer)
                                            .arg(a.endLayer).arg(b.firstLayer).arg(b.endLayer)));
        }
        QVERIFY(mine == *uniform);
        ++matched;
    }
    QVERIFY(matched >= 3);  // the ZeRO stages (with dp x cp > 1) x recompute modes
}

void TestPlannerSearchSpace::nestEqualsExhaustive_data()
{
    QTest::addColumn<int>("seed");
    QTest::addColumn<bool>("interleavedOnly");
    for (int s = 1; s <= 48; ++s)
        QTest::newRow(("seed " + std::to_string(s)).c_str()) << s << false;
    // The interleaved candidates alone (6 blocks: depths 2 and 3 compete).
    for (int s = 49; s <= 64; ++s)
        QTest::newRow(("seed " + std::to_string(s) + " interleaved").c_str()) << s << true;
}

void TestPlannerSearchSpace::nestEqualsExhaustive()
{
    QFETCH(int, seed);
    QFETCH(bool, interleavedOnly);
    std::mt19937 rng(static_cast<unsigned>(seed) * 104729u + 3u);
    const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

    // Every third seed has 6 blocks, so that pp 2 x depth 3 is possible.
    const int blocks = seed % 3 == 0 || interleavedOnly ? 6 : pick(2, 5);
    const int seq = seed % 2 == 0 ? 2048 : 1024;
    const int batch = seed % 4 == 1 ? 12 : 8;
    const ModelProfile model = gptWithBlocks(blocks, seq, 256 * pick(1, 2), batch);
    Topology topo = fatTree(pick(1, 4), pick(1, 2), pick(1, 2));
    if (topo.deviceCount() < 2)
        topo = fatTree(2, 1, 1);

    // Memory as a fraction of what one device holding the whole model without any saving
    // needs (the evaluator's own number), so that ZeRO, recompute, cp or pp must help.
    UniformLayout one;
    one.globalBatch = batch;
    one.seqLength = seq;
    const Report whole = evaluate(buildUniformPlan(one, topo, model).value(), topo, model);
    const double factors[] = {2.0, 0.8, 0.55, 0.4};
    topo.deviceTypes[0].memoryBytes = whole.peakMemoryBytes * factors[seed % 4];

    SearchOptions o;
    o.microBatches = {1, 2};
    o.schedules = {Schedule::OneFOneB, Schedule::Interleaved};
    if (seed % 5 == 0)
        o.schedules.push_back(Schedule::GPipe);
    o.tpCandidates = seed % 2 == 0 ? std::vector<int>{1} : std::vector<int>{1, 2};  // tp 1: width 2+ only by cp
    o.cpCandidates = {1, 2, 4};
    o.cpMinTokensPerRank = 0;
    o.virtualStages = {2, 3};
    o.maxStages = blocks >= 6 ? 2 : 3;  // keeps the enumeration small
    if (interleavedOnly) {
        o.schedules = {Schedule::Interleaved};
        o.maxStages = 3;
    }

    const PlanResult nest = NestPlanner().plan(topo, model, o);
    const PlanResult ex = ExhaustivePlanner().plan(topo, model, o);
    const QString info = QString("devices %1 blocks %2 memory %3 GB | nest %4 (%5) ex %6 (%7)")
                             .arg(topo.deviceCount())
                             .arg(blocks)
                             .arg(topo.deviceTypes[0].memoryBytes / 1e9)
                             .arg(nest.objective, 0, 'g', 15)
                             .arg(QString::fromStdString(nest.message))
                             .arg(ex.objective, 0, 'g', 15)
                             .arg(QString::fromStdString(ex.message));
    QCOMPARE(nest.found, ex.found);
    if (!ex.found) {
        QVERIFY2(!nest.message.empty(), qPrintable(info));
        return;
    }
    QVERIFY2(nest.verified && ex.verified, qPrintable(info));
    QVERIFY2(std::abs(nest.objective - ex.objective) <= 1e-9 * ex.objective, qPrintable(info));
    ++m_found;
    const Plan &p = ex.plan;
    const auto any = [&](Recompute r) {
        return std::any_of(p.stages.begin(), p.stages.end(), [r](const StagePlan &s) { return s.recompute == r; });
    };
    m_selective += any(Recompute::Selective) ? 1 : 0;
    m_full += any(Recompute::Full) ? 1 : 0;
    m_cp += usesCp(p) ? 1 : 0;
    m_interleaved += p.schedule == Schedule::Interleaved ? 1 : 0;
    m_depth3 += p.schedule == Schedule::Interleaved && p.virtualStages == 3 ? 1 : 0;
}

void TestPlannerSearchSpace::coverage()
{
    qDebug() << "found" << m_found << "selective" << m_selective << "full" << m_full << "cp" << m_cp
             << "interleaved" << m_interleaved << "depth 3" << m_depth3;
    // The instances must exercise the new dimensions: optima that use them.
    QVERIFY(m_found >= 30);
    QVERIFY(m_selective >= 5);
    QVERIFY(m_cp >= 5);
    QVERIFY(m_depth3 >= 3);
}

void TestPlannerSearchSpace::longSequenceNeedsContextParallelism_data()
{
    // 64 H100 of 8 per node; a 131072-token sequence and a global batch of 2 sequences
    // (4096 tokens per GPU per iteration, the long-context regime: Llama 3's 128K stage
    // trained 16M-token batches on 16K GPUs, 1K tokens per GPU).
    QTest::addColumn<QString>("cluster");
    QTest::addColumn<QString>("model");
    QTest::newRow("paper-spineleaf-64, llama3-70b") << "paper-spineleaf-64" << "llama3-70b";
    QTest::newRow("paper-spineleaf-64, llama2-7b") << "paper-spineleaf-64" << "llama2-7b";
    QTest::newRow("superpod 8 nodes, llama3-70b") << "superpod" << "llama3-70b";
}

void TestPlannerSearchSpace::longSequenceNeedsContextParallelism()
{
    QFETCH(QString, cluster);
    QFETCH(QString, model);
    const Topology topo = cluster == "superpod"
                              ? makeCluster("superpod", {{"sus", 1}, {"nodes_per_su", 8}}).value()
                              : clusterPreset(cluster.toStdString()).value();
    QCOMPARE(topo.deviceCount(), 64);
    ModelOptions mo;
    mo.seqLength = 131072;
    mo.globalBatch = 2;
    const ModelProfile prof = resolveModel(model.toStdString(), mo).value();

    const SearchOptions defaults;  // the default lists: cp 1..16, depths 2-4, three recompute modes
    const PlanResult withCp = NestPlanner().plan(topo, prof, defaults);
    SearchOptions noCp;
    noCp.cpCandidates = {1};
    const PlanResult best1 = NestPlanner().plan(topo, prof, noCp);
    QVERIFY2(withCp.found && withCp.verified, withCp.message.c_str());
    QVERIFY2(best1.found && best1.verified, best1.message.c_str());
    qDebug() << "cp plan" << withCp.objective << "s, best cp = 1 plan" << best1.objective << "s, ratio"
             << best1.objective / withCp.objective;
    QVERIFY(usesCp(withCp.plan));
    QVERIFY(!usesCp(best1.plan));
    // Both are what the evaluator says of the plans.
    QCOMPARE(evaluate(withCp.plan, topo, prof).iterationTime, withCp.objective);
    QCOMPARE(evaluate(best1.plan, topo, prof).iterationTime, best1.objective);
    QVERIFY(withCp.objective <= best1.objective);
    QVERIFY2(best1.objective >= 2 * withCp.objective,
             qPrintable(QString("only %1x faster").arg(best1.objective / withCp.objective)));
}

QTEST_APPLESS_MAIN(TestPlannerSearchSpace)
#include "test_planner_search_space.moc"
