// A plan's time and memory split by layer kind (issue 45, the window's Memory and Breakdown
// views): the kinds' parts add up to the evaluator's terms, a stage of one kind gets all of
// them, and the additive terms (compute, stash) follow the layers' own sums, worked out here
// a layer at a time.
#include "LayerKindSplit.h"

#include "ClusterIO.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "PlanBuilder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace nest;

namespace {

// Eight blocks "dense, 3*moe" repeated, one MTP module: embedding, dense, moe, mtp, head.
ModelConfig hybrid()
{
    ModelConfig c = familyDefaults("llama");
    c.name = "hybrid";
    c.layers = 8;
    c.hidden = 256;
    c.heads = 8;
    c.kvHeads = 4;
    c.ffnHidden = 512;
    c.vocab = 1000;
    c.experts = 4;
    c.topK = 2;
    c.mtpLayers = 1;
    c.seqLength = 512;
    c.pattern = {{"dense", 1}, {"moe", 3}};
    return c;
}

struct Planned {
    Topology topo;
    ModelProfile model;
    Plan plan;
    Report report;
    PlanKindSplit split;
};

Planned planned(const ModelConfig &config, UniformLayout u, const CostOptions &options = {})
{
    Planned p;
    p.topo = resolveCluster("paper-v100-16").value();
    EXPECT_EQ(validate(config), "");
    p.model = buildProfile(config);
    u.globalBatch = 64;
    u.seqLength = p.model.seqLength;
    p.plan = buildUniformPlan(u, p.topo, p.model).value();
    p.report = evaluate(p.plan, p.topo, p.model, options);
    EXPECT_TRUE(p.report.reasons.empty()) << (p.report.reasons.empty() ? "" : p.report.reasons.front());
    p.split = layerKindSplit(p.plan, p.topo, p.model, options, p.report);
    return p;
}

UniformLayout layout(int tp, int pp, int dp, int ep, int zero, Recompute recompute)
{
    UniformLayout u;
    u.tp = tp;
    u.pp = pp;
    u.dp = dp;
    u.ep = ep;
    u.zero = zero;
    u.recompute = recompute;
    return u;
}

// The ten terms of an iteration split, by name.
std::map<std::string, double> terms(const IterationSplit &s)
{
    return {{"compute", s.compute}, {"recompute", s.recompute}, {"tp", s.tp}, {"ep", s.ep}, {"cp", s.cp},
            {"p2p", s.p2p}, {"gradientSync", s.gradientSync}, {"zero", s.zero}, {"optimizer", s.optimizer},
            {"bubble", s.bubble}};
}

// What the evaluator's stage cost says per iteration, written out from the StageCost fields
// (BreakdownChartView.h's table), not through the split.
std::map<std::string, double> stageTerms(const Plan &plan, const StageReport &s)
{
    const double m = plan.numMicroBatches();
    const StageCost &c = s.cost;
    return {{"compute", m * (c.forward + c.backward)}, {"recompute", m * c.recompute}, {"tp", m * c.tpComm},
            {"ep", m * c.epComm}, {"cp", m * c.cpComm}, {"p2p", m * c.p2p}, {"gradientSync", c.dpSync},
            {"zero", m * c.zeroComm + c.zeroGather}, {"optimizer", c.optimizer}, {"bubble", s.bubble}};
}

void expectNear(double a, double b, const std::string &what)
{
    EXPECT_NEAR(a, b, 1e-9 * std::max({std::abs(a), std::abs(b), 1e-30})) << what;
}

// The split adds up to the report, stage by stage and over the iteration.
void expectSumsToReport(const Planned &p)
{
    ASSERT_EQ(p.split.stages.size(), p.report.stages.size());
    for (size_t k = 0; k < p.report.stages.size(); ++k) {
        const StageReport &sr = p.report.stages[k];
        const StageKindSplit &s = p.split.stages[k];
        EXPECT_EQ(s.stage, sr.index);
        std::map<std::string, double> sum = terms(s.rest);
        double bytes = s.restBytes;
        for (const KindShare &kind : s.kinds) {
            for (const auto &[name, v] : terms(kind.time))
                sum[name] += v;
            EXPECT_EQ(kind.time.p2p, 0.0);
            EXPECT_EQ(kind.time.bubble, 0.0);
            bytes += kind.bytes();
        }
        for (const auto &[name, v] : stageTerms(p.plan, sr))
            expectNear(sum[name], v, "stage " + std::to_string(k) + " " + name);
        expectNear(bytes, sr.cost.memoryTotal, "stage " + std::to_string(k) + " memory");
        expectNear(s.activations + s.overhead, s.restBytes, "stage " + std::to_string(k) + " rest");
    }
    std::map<std::string, double> sum = terms(p.split.iterationRest);
    ASSERT_EQ(p.split.iteration.size(), p.split.kinds.size());
    for (size_t k = 0; k < p.split.kinds.size(); ++k) {
        EXPECT_EQ(p.split.iteration[k].kind, p.split.kinds[k]);
        for (const auto &[name, v] : terms(p.split.iteration[k].time))
            sum[name] += v;
    }
    double total = 0;
    for (const auto &[name, v] : terms(iterationSplit(p.plan, p.report))) {
        expectNear(sum[name], v, "iteration " + name);
        total += sum[name];
    }
    expectNear(total, p.report.iterationTime, "iteration time");
}

// The layer sums of layer `i` alone on stage `k`'s devices and widths.
StageLayerSums layerSums(const Planned &p, int k, int i)
{
    const std::vector<StageContext> contexts = stageContexts(p.plan, p.topo, p.model);
    StageContext ctx = contexts[static_cast<size_t>(k)];
    StagePlan one = *ctx.stage;
    one.firstLayer = i;
    one.endLayer = i + 1;
    ctx.stage = &one;
    const StageGeometry g = stageGeometry(p.topo, one, ctx.dp, ctx.options);
    return stageLayerSums(ctx, g.rates);
}

} // namespace

TEST(LayerKindSplit, addsUpToTheReportOnAHybridStack)
{
    for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
        for (const int zero : {0, 1, 3}) {
            SCOPED_TRACE("recompute " + std::to_string(static_cast<int>(r)) + ", zero " + std::to_string(zero));
            const Planned p = planned(hybrid(), layout(2, 2, 4, 2, zero, r));
            EXPECT_EQ(p.split.kinds, (std::vector<std::string>{"embedding", "dense", "moe", "mtp", "head"}));
            expectSumsToReport(p);
        }
    }
    UniformLayout interleaved = layout(2, 2, 4, 1, 1, Recompute::None);
    interleaved.schedule = Schedule::Interleaved;
    interleaved.virtualStages = 2;
    SCOPED_TRACE("interleaved");
    expectSumsToReport(planned(hybrid(), interleaved));
}

TEST(LayerKindSplit, additiveTermsFollowEachKindsLayers)
{
    const Planned p = planned(hybrid(), layout(2, 2, 4, 2, 1, Recompute::None));
    const double m = p.plan.numMicroBatches();
    for (size_t k = 0; k < p.plan.stages.size(); ++k) {
        const StagePlan &st = p.plan.stages[k];
        std::map<std::string, double> compute, stash;
        double stashAll = 0;
        for (int i = st.firstLayer; i < st.endLayer; ++i) {
            const StageLayerSums one = layerSums(p, static_cast<int>(k), i);
            const std::string kind = layerLabel(p.model.layers[static_cast<size_t>(i)]);
            compute[kind] += m * (one.forward + one.backward);
            stash[kind] += one.stashPerMicroBatch;
            stashAll += one.stashPerMicroBatch;
        }
        const StageKindSplit &s = p.split.stages[k];
        ASSERT_EQ(s.kinds.size(), compute.size());
        for (const KindShare &kind : s.kinds) {
            expectNear(kind.time.compute, compute[kind.kind], "compute of " + kind.kind);
            expectNear(kind.stash, p.report.stages[k].cost.stash * stash[kind.kind] / stashAll, "stash of " + kind.kind);
        }
    }
}

TEST(LayerKindSplit, aStageOfOneKindGetsAllOfItsTerms)
{
    ModelConfig c = hybrid();
    c.pattern = {{"dense", 4}, {"moe", 4}};
    c.mtpLayers = 0;
    UniformLayout u = layout(2, 4, 2, 2, 1, Recompute::Selective);
    u.stageBlocks = {2, 2, 2, 2};   // stage 1: dense blocks only; stage 2: MoE blocks only
    const Planned p = planned(c, u);
    expectSumsToReport(p);
    for (const size_t k : {size_t{1}, size_t{2}}) {
        const StageKindSplit &s = p.split.stages[k];
        ASSERT_EQ(s.kinds.size(), 1u);
        EXPECT_EQ(s.kinds[0].kind, k == 1 ? "dense" : "moe");
        const StageCost &cost = p.report.stages[k].cost;
        EXPECT_DOUBLE_EQ(s.kinds[0].weights, cost.weights);
        EXPECT_DOUBLE_EQ(s.kinds[0].gradients, cost.gradients);
        EXPECT_DOUBLE_EQ(s.kinds[0].optimizerState, cost.optimizerState);
        EXPECT_DOUBLE_EQ(s.kinds[0].stash, cost.stash);
        EXPECT_DOUBLE_EQ(s.kinds[0].time.compute, p.plan.numMicroBatches() * (cost.forward + cost.backward));
        EXPECT_DOUBLE_EQ(s.kinds[0].time.ep, p.plan.numMicroBatches() * cost.epComm);
        EXPECT_EQ(s.rest.compute, 0.0);
    }
    EXPECT_EQ(p.split.stages[1].kinds[0].time.ep, 0.0);   // dense layers exchange no tokens
    EXPECT_GT(p.split.stages[2].kinds[0].time.ep, 0.0);
}

TEST(LayerKindSplit, nothingForAReportThatDoesNotMatchThePlan)
{
    const Planned p = planned(hybrid(), layout(2, 2, 4, 2, 1, Recompute::None));
    Report none;
    EXPECT_TRUE(layerKindSplit(p.plan, p.topo, p.model, {}, none).stages.empty());
    Report shifted = p.report;
    shifted.stages.pop_back();
    EXPECT_TRUE(layerKindSplit(p.plan, p.topo, p.model, {}, shifted).stages.empty());
}
