// Framework exports (issue 21): the rank rules against hand-computed coordinates, the
// placement kept or said to be lost, the fallback rules with both times, --strict, and the
// launch files' numbers. The exported files' syntax and the read-back time through the CLI
// are checked by tests/interop/check_exports.py with independent parsers.
#include "Fixtures.h"

#include "ClusterIO.h"
#include "FrameworkExport.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "RankMapping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

using namespace nest;

namespace {

using fixtures::spineleaf64;  // 8 nodes of 8 H100, 4 nodes per leaf

ModelProfile llama7b() { return fixtures::llama2_7b(4096, 512); }  // embedding, 32 blocks, head

// Stage k: layers [bounds[k], bounds[k+1]); its devices per replica given.
Plan planOf(const std::vector<int> &bounds, const std::vector<std::vector<std::vector<int>>> &devices, int tp, int dp)
{
    Plan p;
    p.globalBatch = 512;
    p.microBatch = 1;
    p.seqLength = 4096;
    p.dp = dp;
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
        StagePlan s;
        s.firstLayer = bounds[k];
        s.endLayer = bounds[k + 1];
        s.tp = tp;
        s.devices = devices[k];
        p.stages.push_back(s);
    }
    return p;
}

// Each replica's pipeline (tp 2 x 4 stages) on its own node: replica r on node r.
Plan pipelinePerNode()
{
    std::vector<std::vector<std::vector<int>>> devs(4);
    for (int p = 0; p < 4; ++p)
        for (int r = 0; r < 8; ++r)
            devs[static_cast<size_t>(p)].push_back({8 * r + 2 * p, 8 * r + 2 * p + 1});
    return planOf({0, 9, 17, 25, 34}, devs, 2, 8);
}

ExportRequest requestFor(const Plan &plan)
{
    ExportRequest r;
    r.plan = plan;
    r.topology = spineleaf64();
    r.model = llama7b();
    auto c = modelPreset("llama2-7b");
    r.config = *c;
    r.config->seqLength = 4096;
    return r;
}

// A model of torchtitan's registry: Llama 3 8B (torchtitan/models/llama3/__init__.py "8B":
// dim 4096, 32 layers, 32 heads, 8 KV heads, FFN 14336 by its multiple_of rule, vocab 128256).
ModelConfig llama3_8bConfig()
{
    ModelConfig c = *modelPreset("llama2-7b");
    c.name = "llama3-8b";
    c.kvHeads = 8;
    c.ffnHidden = 14336;
    c.vocab = 128256;
    c.seqLength = 4096;
    c.globalBatch = 512;
    return c;
}

ExportRequest requestFor8b(const Plan &plan)
{
    ExportRequest r;
    r.plan = plan;
    r.topology = spineleaf64();
    r.config = llama3_8bConfig();
    r.model = buildProfile(*r.config);
    return r;
}

// tp x pp x dp on the spine-leaf cluster, batch 512 of 4096 tokens.
UniformLayout layoutOf(int tp, int pp, int dp) { return fixtures::uniformLayout(tp, pp, dp, 512, 4096); }

bool contains(const std::string &text, const std::string &part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

TEST(RankRules, MegatronDefaultOrderByHand)
{
    // tp 2, cp 1, dp 4, pp 2 (16 ranks): rank = tp + 2 dp + 8 pp.
    const auto order = *parseRankOrder("tp-cp-ep-dp-pp");
    RankSizes s{2, 1, 1, 4, 2};
    EXPECT_EQ(coordinateOfRank(5, order, s), (PlanCoordinate{0, 2, 0, 1}));   // 5 = 1 + 2*2
    EXPECT_EQ(coordinateOfRank(13, order, s), (PlanCoordinate{1, 2, 0, 1})); // 13 = 1 + 2*2 + 8
    EXPECT_EQ(coordinateOfRank(8, order, s), (PlanCoordinate{1, 0, 0, 0}));
}

TEST(RankRules, SecondMegatronOrderAndContextParallelByHand)
{
    // --use-tp-pp-dp-mapping: tp-cp-ep-pp-dp, rank = tp + 2 pp + 4 dp (tp 2, pp 2, dp 4).
    const auto order = *parseRankOrder("tp-cp-ep-pp-dp");
    EXPECT_EQ(coordinateOfRank(5, order, RankSizes{2, 1, 1, 4, 2}), (PlanCoordinate{0, 1, 0, 1}));
    // tp 2, cp 2, dp 2, pp 1: rank = tp + 2 cp + 4 dp.
    const auto def = *parseRankOrder("tp-cp-dp-pp");
    EXPECT_EQ(coordinateOfRank(6, def, RankSizes{2, 2, 1, 2, 1}), (PlanCoordinate{0, 1, 1, 0}));
}

TEST(RankMapping, UniformPlanKeepsHostsAndGpus)
{
    const Topology t = spineleaf64();
    UniformLayout u = layoutOf(8, 2, 4);
    const Plan plan = *buildUniformPlan(u, t, llama7b());
    const auto m = mapRanks(plan, t, "tp-cp-ep-dp-pp");
    ASSERT_TRUE(m.ok()) << m.error();
    EXPECT_EQ(m->procsPerNode, 8);
    ASSERT_EQ(m->hosts.size(), 8u);
    for (size_t k = 0; k < 8; ++k) {
        EXPECT_EQ(m->hosts[k].node, t.devices[8 * k].node);  // rank block k = devices 8k..8k+7
        EXPECT_EQ(m->visibleDevices(static_cast<int>(k)), "0,1,2,3,4,5,6,7");
    }
    EXPECT_EQ(m->hostfile().substr(0, m->hosts[0].host.size() + 8), m->hosts[0].host + " slots=8");
}

TEST(RankMapping, PermutedDevicesGivePermutedVisibleDevices)
{
    // tp 2 x dp 4 on one node, each replica's two GPUs reversed and replicas reversed.
    const Topology t = spineleaf64();
    std::vector<std::vector<std::vector<int>>> devs(1);
    for (int r = 0; r < 4; ++r)
        devs[0].push_back({7 - 2 * r, 6 - 2 * r});
    const Plan plan = planOf({0, 34}, devs, 2, 4);
    const auto m = mapRanks(plan, t, "tp-cp-ep-dp-pp");
    ASSERT_TRUE(m.ok()) << m.error();
    ASSERT_EQ(m->hosts.size(), 1u);
    // rank = tp + 2 replica: rank 0 -> replica 0 shard 0 = GPU 7, rank 1 -> GPU 6, ...
    EXPECT_EQ(m->visibleDevices(0), "7,6,5,4,3,2,1,0");
}

TEST(RankMapping, PipelinePerNodeNeedsTheSecondMegatronOrder)
{
    const Topology t = spineleaf64();
    const Plan plan = pipelinePerNode();
    // Default order: ranks 0..7 are tp x dp 0..3 of stage 0, on nodes 0..3.
    const auto def = mapRanks(plan, t, "tp-cp-ep-dp-pp");
    EXPECT_FALSE(def.ok());
    EXPECT_TRUE(contains(def.error(), "ranks 0 to 7"));
    const auto alt = mapRanks(plan, t, "tp-cp-ep-pp-dp");
    ASSERT_TRUE(alt.ok()) << alt.error();
    EXPECT_EQ(alt->visibleDevices(0), "0,1,2,3,4,5,6,7");

    auto e = exportPlan(requestFor(plan), ExportFormat::Megatron);
    ASSERT_TRUE(e.ok()) << e.error();
    EXPECT_FALSE(e->fellBack()) << e->summary();
    EXPECT_EQ(e->runnable.orderIndex, 1u);
    EXPECT_TRUE(contains(e->files.front().text, "--use-tp-pp-dp-mapping"));
    EXPECT_EQ(e->runnable.plan, plan);

    // DeepSpeed numbers model, data, pipe: no order places it; the ranks are laid node by node.
    auto ds = exportPlan(requestFor(plan), ExportFormat::DeepSpeed);
    ASSERT_TRUE(ds.ok()) << ds.error();
    ASSERT_TRUE(ds->fellBack());
    EXPECT_TRUE(contains(ds->runnable.changes.back(), "laid node by node"));
    EXPECT_NE(ds->exported.iterationTime, ds->original.iterationTime);
}

TEST(Fallback, PerStageTensorWidthsOneWidthWithBothTimes)
{
    auto t = resolveCluster("paper-v100-16");
    ModelOptions o;
    o.seqLength = 512;
    o.globalBatch = 256;
    auto m = resolveModel("bert-large", o);
    ASSERT_TRUE(t.ok() && m.ok());
    Plan plan;
    plan.globalBatch = 256;
    plan.microBatch = 2;
    plan.seqLength = 512;
    plan.dp = 4;
    StagePlan a;
    a.firstLayer = 0;
    a.endLayer = 13;
    a.tp = 2;
    a.devices = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
    StagePlan b;
    b.firstLayer = 13;
    b.endLayer = m->layerCount();
    b.tp = 1;
    b.devices = {{8}, {9}, {10}, {11}};
    plan.stages = {a, b};
    ExportRequest r;
    r.plan = plan;
    r.topology = *t;
    r.model = *m;
    auto e = exportPlan(r, ExportFormat::Megatron);
    ASSERT_TRUE(e.ok()) << e.error();
    ASSERT_TRUE(e->fellBack());
    EXPECT_TRUE(contains(e->runnable.changes.front(), "per-stage tensor widths (tp 2, 1)"));
    // One of the stages' own widths everywhere (the faster under the cost model).
    const int tp = e->runnable.plan.stages.front().tp;
    EXPECT_TRUE(tp == 1 || tp == 2);
    for (const StagePlan &s : e->runnable.plan.stages)
        EXPECT_EQ(s.tp, tp);
    EXPECT_EQ(e->exported.iterationTime, evaluate(e->runnable.plan, *t, *m, r.cost).iterationTime);
    EXPECT_EQ(e->original.iterationTime, evaluate(plan, *t, *m, r.cost).iterationTime);
    char pct[32];
    std::snprintf(pct, sizeof pct, "%+.1f %%", 100 * (e->exported.iterationTime / e->original.iterationTime - 1));
    EXPECT_TRUE(contains(e->summary(), std::string("(") + pct + ")")) << e->summary();
    EXPECT_TRUE(contains(e->summary(), "instead of"));
    EXPECT_TRUE(contains(e->files.front().text, "FALLBACK"));

    r.strict = true;
    auto strict = exportPlan(r, ExportFormat::Megatron);
    ASSERT_FALSE(strict.ok());
    EXPECT_TRUE(contains(strict.error(), "per-stage tensor widths"));
}

TEST(Fallback, ZeroStagesEachFrameworkOffers)
{
    const Topology t = spineleaf64();
    UniformLayout u = layoutOf(8, 2, 4);
    u.zero = 3;
    u.sp = true;  // torchtitan's TP always shards the sequence
    const Plan zero3 = *buildUniformPlan(u, t, llama7b());
    auto mg = exportPlan(requestFor(zero3), ExportFormat::Megatron);
    ASSERT_TRUE(mg.ok());
    EXPECT_EQ(mg->runnable.plan.stages.front().zero, 1);  // the distributed optimizer
    auto ds = exportPlan(requestFor(zero3), ExportFormat::DeepSpeed);
    ASSERT_TRUE(ds.ok());
    EXPECT_EQ(ds->runnable.plan.stages.front().zero, 1);  // ZeRO-2/3 refused with pipelining
    EXPECT_TRUE(contains(ds->runnable.changes.front(), "without pipeline parallelism"));
    const ModelProfile l3 = buildProfile(llama3_8bConfig());
    const Plan zero3l3 = *buildUniformPlan(u, t, l3);
    auto tt = exportPlan(requestFor8b(zero3l3), ExportFormat::Torchtitan);
    ASSERT_TRUE(tt.ok()) << tt.error();
    EXPECT_FALSE(tt->fellBack()) << tt->summary();  // FSDP2 = ZeRO-3
    u.zero = 1;
    auto tt1 = exportPlan(requestFor8b(*buildUniformPlan(u, t, l3)), ExportFormat::Torchtitan);
    ASSERT_TRUE(tt1.ok()) << tt1.error();
    // No ZeRO-1: docs/interop.md says 1 -> 2 (FSDP2 without resharding), never 0 (which, with
    // tp 8 and pp 2, torchtitan would also run in FP32).
    EXPECT_EQ(tt1->runnable.plan.stages.front().zero, 2);
    EXPECT_TRUE(contains(tt1->files.front().text, "fsdp_reshard_after_forward = 'never'")) << tt1->files.front().text;
    EXPECT_TRUE(contains(tt1->files.front().text, "data_parallel_shard_degree = 4"));
}

TEST(Fallback, TorchtitanBf16NeedsFsdpWithTensorOrPipelineParallelism)
{
    // torchtitan/distributed/utils.py maybe_enable_amp: with tp or pp and neither FSDP nor cp,
    // mixed precision is off. ZeRO-0 with tp 8 becomes ZeRO-2; with no replicas it is refused.
    const Topology t = spineleaf64();
    const ModelProfile l3 = buildProfile(llama3_8bConfig());
    UniformLayout u = layoutOf(8, 2, 4);
    u.sp = true;
    auto tt = exportPlan(requestFor8b(*buildUniformPlan(u, t, l3)), ExportFormat::Torchtitan);
    ASSERT_TRUE(tt.ok()) << tt.error();
    ASSERT_TRUE(tt->fellBack());
    EXPECT_TRUE(contains(tt->summary(), "BF16 only under FSDP")) << tt->summary();
    EXPECT_TRUE(contains(tt->files.front().text, "data_parallel_replicate_degree = 1"));
    UniformLayout one = layoutOf(8, 8, 1);
    one.sp = true;
    auto none = exportPlan(requestFor8b(*buildUniformPlan(one, t, l3)), ExportFormat::Torchtitan);
    ASSERT_FALSE(none.ok());
    EXPECT_TRUE(contains(none.error(), "FP32")) << none.error();
    // Pure data parallelism runs under torch.autocast: no change.
    UniformLayout ddp = layoutOf(1, 1, 64);
    auto plain = exportPlan(requestFor8b(*buildUniformPlan(ddp, t, l3)), ExportFormat::Torchtitan);
    ASSERT_TRUE(plain.ok()) << plain.error();
    EXPECT_FALSE(plain->fellBack()) << plain->summary();
}

TEST(ExportErrors, ModelsTheFrameworkCannotBuildAreRefused)
{
    // torchtitan@6404b932 has llama3 8B / 70B / 405B: Llama 2 7B (32 KV heads, FFN 11008, vocab
    // 32000) is none of them, with or without --strict.
    const Topology t = spineleaf64();
    const Plan plan = *buildUniformPlan(layoutOf(1, 1, 64), t, llama7b());
    for (bool strict : {false, true}) {
        ExportRequest r = requestFor(plan);
        r.strict = strict;
        auto tt = exportPlan(r, ExportFormat::Torchtitan);
        ASSERT_FALSE(tt.ok());
        EXPECT_TRUE(contains(tt.error(), "torchtitan cannot train this model")) << tt.error();
        EXPECT_TRUE(contains(tt.error(), "FFN 11008")) << tt.error();
    }
    // NeMo's GPT entry point builds no BERT.
    auto v100 = resolveCluster("paper-v100-16");
    ModelOptions o;
    o.seqLength = 512;
    o.globalBatch = 256;
    auto bert = resolveModel("bert-large", o);
    ASSERT_TRUE(v100.ok() && bert.ok());
    UniformLayout u = layoutOf(1, 1, 16);
    u.globalBatch = 256;
    u.seqLength = 512;
    ExportRequest r;
    r.plan = *buildUniformPlan(u, *v100, *bert);
    r.topology = *v100;
    r.model = *bert;
    r.config = *modelPreset("bert-large");
    r.config->seqLength = 512;
    auto nemo = exportPlan(r, ExportFormat::Nemo);
    ASSERT_FALSE(nemo.ok());
    EXPECT_TRUE(contains(nemo.error(), "NeMo cannot train this model")) << nemo.error();
    // Megatron-LM and DeepSpeed run BERT with their BERT entry points.
    auto mg = exportPlan(r, ExportFormat::Megatron);
    ASSERT_TRUE(mg.ok()) << mg.error();
    EXPECT_TRUE(contains(mg->files.front().text, "pretrain_bert.py"));
    auto ds = exportPlan(r, ExportFormat::DeepSpeed);
    ASSERT_TRUE(ds.ok()) << ds.error();
    bool script = false;
    for (const ExportFile &f : ds->files)
        if (f.name.size() > 3 && f.name.substr(f.name.size() - 3) == ".sh") {
            script = true;
            EXPECT_TRUE(contains(f.text, "pretrain_bert.py") && contains(f.text, "--no-pipeline-parallel")) << f.text;
        }
    EXPECT_TRUE(script);
}

TEST(Fallback, DeepSpeedBalancedSplitAsDeepSpeedCutsIt)
{
    // deepspeed/runtime/utils.py partition_balanced (v0.15) run on [embedding, L blocks, norm,
    // head] weighted 1 per block, counted per stage (the numbers DeepSpeed's own code prints).
    EXPECT_EQ(deepSpeedBalancedSplit(32, 3), (std::vector<int>{11, 11, 10}));
    EXPECT_EQ(deepSpeedBalancedSplit(32, 4), (std::vector<int>{8, 8, 8, 8}));
    EXPECT_EQ(deepSpeedBalancedSplit(30, 4), (std::vector<int>{8, 8, 7, 7}));
    EXPECT_EQ(deepSpeedBalancedSplit(80, 3), (std::vector<int>{27, 27, 26}));
    EXPECT_EQ(deepSpeedBalancedSplit(7, 3), (std::vector<int>{3, 2, 2}));
    EXPECT_EQ(deepSpeedBalancedSplit(40, 6), (std::vector<int>{7, 7, 7, 7, 6, 6}));
    EXPECT_EQ(deepSpeedBalancedSplit(96, 7), (std::vector<int>{14, 14, 14, 14, 14, 13, 13}));
    EXPECT_EQ(deepSpeedBalancedSplit(2, 3), (std::vector<int>{1, 1, 0}));
    EXPECT_EQ(deepSpeedBalancedSplit(1, 4), (std::vector<int>{0, 1, 0, 0}));
    EXPECT_EQ(deepSpeedBalancedSplit(26, 5), (std::vector<int>{6, 5, 5, 5, 5}));
}

TEST(Fallback, UnevenStagesPerFramework)
{
    const Topology t = spineleaf64();
    UniformLayout u = layoutOf(8, 4, 2);
    u.stageBlocks = {9, 8, 8, 7};
    const Plan ends = *buildUniformPlan(u, t, llama7b());
    auto mg = exportPlan(requestFor(ends), ExportFormat::Megatron);
    ASSERT_TRUE(mg.ok());
    EXPECT_FALSE(mg->fellBack()) << mg->summary();
    EXPECT_TRUE(contains(mg->files.front().text, "--decoder-first-pipeline-num-layers 9"));
    EXPECT_TRUE(contains(mg->files.front().text, "--decoder-last-pipeline-num-layers 7"));
    auto nemo = exportPlan(requestFor(ends), ExportFormat::Nemo);
    ASSERT_TRUE(nemo.ok());
    ASSERT_TRUE(nemo->fellBack());
    EXPECT_EQ(nemo->runnable.stageBlocks, (std::vector<int>{8, 8, 8, 8}));
    // DeepSpeed builds what Megatron-DeepSpeed's GPTModelPipe asks: partition_balanced over the
    // blocks, 8 per stage for 32 over 4; no partition file the launched program would not read.
    auto ds = exportPlan(requestFor(ends), ExportFormat::DeepSpeed);
    ASSERT_TRUE(ds.ok());
    ASSERT_TRUE(ds->fellBack());
    EXPECT_EQ(ds->runnable.stageBlocks, (std::vector<int>{8, 8, 8, 8}));
    EXPECT_TRUE(contains(ds->runnable.changes.back(), "partition_balanced")) << ds->summary();
    for (const ExportFile &f : ds->files)
        EXPECT_FALSE(contains(f.name, "_partition.py")) << f.name;

    u.stageBlocks = {7, 9, 8, 8};  // the interior differs: Megatron-LM lists the stages
    auto mid = exportPlan(requestFor(*buildUniformPlan(u, t, llama7b())), ExportFormat::Megatron);
    ASSERT_TRUE(mid.ok());
    EXPECT_FALSE(mid->fellBack()) << mid->summary();
    EXPECT_TRUE(contains(mid->files.front().text, "--pipeline-model-parallel-layout 'Et*7|t*9|t*8|t*8L'"))
        << mid->files.front().text;
    // ... but not with interleaving, where it keeps its even split.
    UniformLayout v = u;
    v.schedule = Schedule::Interleaved;
    v.virtualStages = 2;
    v.stageBlocks = {3, 5, 4, 4, 4, 4, 4, 4};
    auto inter = exportPlan(requestFor(*buildUniformPlan(v, t, llama7b())), ExportFormat::Megatron);
    ASSERT_TRUE(inter.ok()) << inter.error();
    ASSERT_TRUE(inter->fellBack());
    EXPECT_EQ(inter->runnable.stageBlocks, (std::vector<int>(8, 4)));
}

TEST(ExportErrors, PlanForAnotherClusterIsRefused)
{
    auto r = requestFor(pipelinePerNode());
    auto small = resolveCluster("paper-v100-16");
    r.topology = *small;
    auto e = exportPlan(r, ExportFormat::Torchtitan);
    ASSERT_FALSE(e.ok());
    EXPECT_TRUE(contains(e.error(), "does not match"));
    EXPECT_FALSE(exportFormatFromString("slurm").has_value());
    EXPECT_EQ(exportFormatFromString("Megatron-LM"), ExportFormat::Megatron);
}
