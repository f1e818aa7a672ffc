// Embedding and loss as pipeline units (issue 23, point 4; docs/planner.md "Pipeline units"):
// the uniform split counts them as NeMo / Megatron-Core do with
// account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split, the
// interleaved candidates of the planner are cut the same way, plans record it, and the
// framework exports say it.
#include "Evaluator.h"
#include "FrameworkExport.h"
#include "RunnablePlan.h"
#include "ModelBuilder.h"
#include "ModelIO.h"
#include "NestPlanner.h"
#include "PlanBuilder.h"
#include "PlanIO.h"
#include "PlanSpace.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace nest;

namespace {

// A small GPT-shaped model with `blocks` transformer blocks (embedding first, head last).
ModelProfile gptModel(int blocks, int vocab = 3072, int hidden = 256)
{
    ModelConfig c = familyDefaults("gpt");
    c.name = "gpt-" + std::to_string(blocks);
    c.layers = blocks;
    c.hidden = hidden;
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 4 * hidden;
    c.vocab = vocab;
    c.seqLength = 128;
    c.maxPositions = 128;
    c.globalBatch = 8;
    return buildProfile(c);
}

Topology flatCluster(int nodes, int perNode, double memoryBytes)
{
    const DeviceSpec d = coretest::testDevice(memoryBytes);
    LinkParams inNode{200e9, 1e-6, 1.0};
    LinkParams across{25e9, 5e-6, 1.0};
    return Topology::uniform("flat", d, {{"node", perNode, inNode}, {"cluster", nodes, across}});
}

// Megatron-Core's layer offset and count of pipeline rank `pp` and chunk `vp` with the
// embedding and the loss counted (megatron/core/transformer/transformer_layer.py,
// get_transformer_layer_offset; transformer_block.py, get_num_layers_to_build), written
// out by hand: U = blocks + 2 units, U / (PP * VP) per chunk; chunk (pp, vp) starts at unit
// vp * (U / VP) + pp * (U / (PP * VP)), one less in blocks when it is not the very first
// chunk (the embedding took unit 0); the first chunk builds one block fewer (the
// embedding), the last one fewer (the loss).
struct HandChunk {
    int firstBlock, blocks;
};
HandChunk megatronChunk(int blocks, int pp, int vp, int ppRank, int vpRank)
{
    const int units = blocks + 2;
    const int perChunk = units / (pp * vp);
    int offset = vpRank * (units / vp) + ppRank * perChunk;
    const bool first = ppRank == 0 && vpRank == 0;
    const bool last = ppRank == pp - 1 && vpRank == vp - 1;
    if (!first)
        offset -= 1;
    return {offset, perChunk - (first ? 1 : 0) - (last ? 1 : 0)};
}

} // namespace

TEST(PipelineUnits, spellings)
{
    for (PipelineUnits u : {PipelineUnits::Layers, PipelineUnits::LayersEmbedding, PipelineUnits::LayersEmbeddingLoss}) {
        PipelineUnits back;
        ASSERT_TRUE(pipelineUnitsFromString(toString(u), back));
        EXPECT_EQ(back, u);
    }
    PipelineUnits x;
    EXPECT_FALSE(pipelineUnitsFromString("Layers", x));
    EXPECT_FALSE(pipelineUnitsFromString("layers+loss", x));
    EXPECT_FALSE(pipelineUnitsFromString("", x));
}

// 70 blocks + embedding + loss = 72 units: 72 stages, each one unit (BLOOM-176B's 70 blocks
// as DeepSpeed's type:transformer|embedding counts them). Counted in blocks it is refused.
TEST(PipelineUnits, seventyBlocksOnSeventyTwoStages)
{
    const ModelProfile model = gptModel(70);
    ASSERT_EQ(model.layerCount(), 72);
    const Topology topo = flatCluster(9, 8, 80e9);
    UniformLayout u;
    u.pp = 72;
    u.globalBatch = 72;
    u.seqLength = model.seqLength;
    auto refused = buildUniformPlan(u, topo, model);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("70 transformer blocks"), std::string::npos) << refused.error();

    u.pipelineUnits = PipelineUnits::LayersEmbedding;
    auto stillRefused = buildUniformPlan(u, topo, model);
    ASSERT_FALSE(stillRefused);
    EXPECT_NE(stillRefused.error().find("71 pipeline units"), std::string::npos) << stillRefused.error();

    u.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    auto plan = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(plan) << plan.error();
    ASSERT_EQ(plan->stages.size(), 72u);
    EXPECT_EQ(plan->pipelineUnits, PipelineUnits::LayersEmbeddingLoss);
    for (int k = 0; k < 72; ++k) {
        EXPECT_EQ(plan->stages[static_cast<size_t>(k)].firstLayer, k);
        EXPECT_EQ(plan->stages[static_cast<size_t>(k)].endLayer, k + 1);
    }
    EXPECT_EQ(model.layers[static_cast<size_t>(plan->stages.front().firstLayer)].kind, LayerKind::Embedding);
    EXPECT_EQ(model.layers[static_cast<size_t>(plan->stages.back().firstLayer)].kind, LayerKind::Head);
    const Report rep = evaluate(*plan, topo, model);
    EXPECT_TRUE(rep.feasible) << (rep.reasons.empty() ? "" : rep.reasons.front());

    // BLOOM's published pp 12: 6 units per stage, the embedding and the head one each.
    u.pp = 12;
    u.globalBatch = 12;
    auto twelve = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(twelve) << twelve.error();
    EXPECT_EQ(blocksPerStage(*twelve, model), (std::vector<int>{5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5}));
    u.pipelineUnits = PipelineUnits::Layers;
    auto inBlocks = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(inBlocks);
    EXPECT_EQ(blocksPerStage(*inBlocks, model), (std::vector<int>{6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5}));
}

// 8 pipeline stages, 4 chunks per stage (interleaved:4), 126 blocks + embedding + loss =
// 128 units: each chunk holds the blocks NeMo's Megatron-Core builds for it, and the
// planner's interleaved candidate is the same split.
TEST(PipelineUnits, interleavedSplitIsNemos)
{
    const ModelProfile model = gptModel(126);
    const Topology topo = flatCluster(8, 8, 80e9);
    UniformLayout u;
    u.pp = 8;
    u.schedule = Schedule::Interleaved;
    u.virtualStages = 4;
    u.globalBatch = 64;
    u.seqLength = model.seqLength;
    u.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    auto plan = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(plan) << plan.error();
    ASSERT_EQ(plan->stages.size(), 32u);

    SearchOptions o;
    o.globalBatch = 64;
    o.microBatches = {1};
    o.schedules = {Schedule::Interleaved};
    o.virtualStages = {4};
    o.tpCandidates = {1};
    o.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    const PlanSpace space(topo, model, o);
    ASSERT_TRUE(space.problem().empty()) << space.problem();
    InterleavedChoice choice;
    choice.pp = 8;
    choice.virtualStages = 4;
    const std::vector<StageChoice> chunks = space.interleavedChunks(choice);
    ASSERT_EQ(chunks.size(), 32u);

    for (int vp = 0; vp < 4; ++vp) {
        for (int pp = 0; pp < 8; ++pp) {
            SCOPED_TRACE("pp rank " + std::to_string(pp) + ", chunk " + std::to_string(vp));
            const int k = vp * 8 + pp;  // chunk k runs on pipeline rank k mod 8
            const HandChunk hand = megatronChunk(126, 8, 4, pp, vp);
            // Layer index = block index + 1 (layer 0 is the embedding).
            const int first = k == 0 ? 0 : hand.firstBlock + 1;
            const int end = hand.firstBlock + 1 + hand.blocks + (k == 31 ? 1 : 0);
            const StagePlan &s = plan->stages[static_cast<size_t>(k)];
            EXPECT_EQ(s.firstLayer, first);
            EXPECT_EQ(s.endLayer, end);
            EXPECT_EQ(s.devices, plan->stages[static_cast<size_t>(pp)].devices);
            EXPECT_EQ(chunks[static_cast<size_t>(k)].firstLayer, first);
            EXPECT_EQ(chunks[static_cast<size_t>(k)].endLayer, end);
        }
    }
    // By hand: chunk 0 = embedding + blocks 0-2, chunk 1 = blocks 3-6, chunk 31 = blocks 123-125 + head.
    EXPECT_EQ(plan->stages[0].endLayer, 4);
    EXPECT_EQ(plan->stages[1].firstLayer, 4);
    EXPECT_EQ(plan->stages[1].endLayer, 8);
    EXPECT_EQ(plan->stages[31].firstLayer, 124);

    // Counted in blocks (the default), 126 blocks do not split evenly into 32 chunks and
    // the embedding and the head ride on top: a different split.
    u.pipelineUnits = PipelineUnits::Layers;
    auto inBlocks = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(inBlocks);
    EXPECT_NE(inBlocks->stages[1].firstLayer, 4);
}

// With the units counted, the interleaved space admits more chunks (pp x v <= units) and
// the planner's objective is the evaluator's time of the returned plan.
TEST(PipelineUnits, plannerConsistentAndRecorded)
{
    const ModelProfile model = gptModel(5);
    const Topology topo = flatCluster(2, 4, 80e9);
    for (PipelineUnits units :
         {PipelineUnits::Layers, PipelineUnits::LayersEmbedding, PipelineUnits::LayersEmbeddingLoss}) {
        SCOPED_TRACE(toString(units));
        SearchOptions o;
        o.globalBatch = 24;
        o.microBatches = {1, 2};
        o.schedules = {Schedule::Interleaved};
        o.virtualStages = {2, 4};
        o.pipelineUnits = units;
        const PlanResult r = NestPlanner().plan(topo, model, o);
        ASSERT_TRUE(r.found) << r.message;
        EXPECT_TRUE(r.verified);
        EXPECT_EQ(r.plan.pipelineUnits, units);
        const Report rep = evaluate(r.plan, topo, model, o.cost);
        EXPECT_LE(std::abs(rep.iterationTime - r.objective), 1e-9 * r.objective);
        // Every candidate of the space is cut by the units rule.
        const PlanSpace space(topo, model, o);
        int most = 0;
        for (const OuterConfig &cfg : space.configs())
            for (const InterleavedChoice &c : space.interleavedChoices(cfg))
                most = std::max(most, c.pp * c.virtualStages);
        // Layers: at most the 5 blocks (2 x 2); units: 3 stages x 2 chunks of 6 or 7 units.
        const int unitCount = 5 + (countsEmbedding(units) ? 1 : 0) + (countsLoss(units) ? 1 : 0);
        EXPECT_LE(most, unitCount);
        if (units == PipelineUnits::Layers)
            EXPECT_EQ(most, 4);
        else
            EXPECT_EQ(most, 6);
    }
}

// 70 blocks on 72 devices whose memory holds one unit's training state but not two: the
// only plans are 72 one-unit stages, and the planner finds one.
TEST(PipelineUnits, plannerPlansSeventyTwoStages)
{
    // Wide enough that a unit's training state outweighs the stashed activations (8
    // micro-batches of 128 tokens), the embedding the size of a block.
    const ModelProfile model = gptModel(70, 12288, 1024);
    // Memory of one stage per unit (generous devices), to size the tight ones.
    UniformLayout u;
    u.pp = 72;
    u.globalBatch = 8;
    u.seqLength = model.seqLength;
    u.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    const Topology roomy = flatCluster(9, 8, 80e9);
    auto single = buildUniformPlan(u, roomy, model);
    ASSERT_TRUE(single) << single.error();
    const Report one = evaluate(*single, roomy, model);
    double most = 0;
    for (const StageReport &s : one.stages)
        most = std::max(most, s.cost.memoryTotal);
    // Two neighbouring units together, the least of them.
    double leastPair = 1e300;
    for (int k = 0; k + 1 < 72; ++k) {
        UniformLayout pair = u;
        pair.pp = 71;
        pair.globalBatch = 8;
        pair.stageBlocks.assign(71, 1);
        pair.stageBlocks.front() = 0;
        pair.stageBlocks.back() = 0;
        // Stage k holds units k and k + 1: blocks per stage in units minus edges.
        std::vector<int> unitsPerStage(71, 1);
        unitsPerStage[static_cast<size_t>(k)] = 2;
        for (int s = 0; s < 71; ++s)
            pair.stageBlocks[static_cast<size_t>(s)] = unitsPerStage[static_cast<size_t>(s)] - (s == 0 ? 1 : 0) -
                                                       (s == 70 ? 1 : 0);
        pair.pipelineUnits = PipelineUnits::Layers;
        auto p = buildUniformPlan(pair, roomy, model);
        ASSERT_TRUE(p) << p.error();
        const Report r = evaluate(*p, roomy, model);
        leastPair = std::min(leastPair, r.stages[static_cast<size_t>(k)].cost.memoryTotal);
    }
    ASSERT_LT(most, leastPair) << "the model does not separate one unit from two";
    const Topology tight = flatCluster(9, 8, 0.5 * (most + leastPair));

    SearchOptions o;
    o.globalBatch = 8;
    o.microBatches = {1};
    o.schedules = {Schedule::OneFOneB};
    o.tpCandidates = {1};
    o.cpCandidates = {1};
    o.allowZero = false;
    o.allowRecompute = false;
    o.dpCandidates = {1};
    o.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    const PlanResult r = NestPlanner().plan(tight, model, o);
    ASSERT_TRUE(r.found) << r.message;
    EXPECT_TRUE(r.verified);
    ASSERT_EQ(r.plan.stages.size(), 72u);
    EXPECT_EQ(r.plan.pipelineUnits, PipelineUnits::LayersEmbeddingLoss);

    // NeMo runs it as it is: 72 stages of one unit each, with both keys.
    ExportRequest req;
    req.plan = r.plan;
    req.topology = tight;
    req.model = model;
    auto nemo = exportPlan(req, ExportFormat::Nemo);
    ASSERT_TRUE(nemo) << nemo.error();
    EXPECT_FALSE(nemo->fellBack()) << nemo->summary();
    const std::string &yaml = nemo->files.front().text;
    EXPECT_NE(yaml.find("account_for_embedding_in_pipeline_split: true"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("account_for_loss_in_pipeline_split: true"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("pipeline_model_parallel_size: 72"), std::string::npos) << yaml;
}

TEST(PipelineUnits, exportsSayIt)
{
    // BLOOM-like: 70 tied blocks on 12 stages of 6 units.
    const ModelProfile model = gptModel(70);
    const Topology topo = flatCluster(12, 8, 80e9);
    UniformLayout u;
    u.pp = 12;
    u.tp = 8;
    u.globalBatch = 24;
    u.seqLength = model.seqLength;
    u.order = "tp-cp-ep-dp-pp";
    u.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    auto plan = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(plan) << plan.error();
    ExportRequest req;
    req.plan = *plan;
    req.topology = topo;
    req.model = model;

    auto mg = exportPlan(req, ExportFormat::Megatron);
    ASSERT_TRUE(mg) << mg.error();
    EXPECT_FALSE(mg->fellBack()) << mg->summary();
    const std::string &sh = mg->files.front().text;
    EXPECT_NE(sh.find("--account-for-embedding-in-pipeline-split"), std::string::npos);
    EXPECT_NE(sh.find("--account-for-loss-in-pipeline-split"), std::string::npos);
    EXPECT_EQ(sh.find("--decoder-first-pipeline-num-layers"), std::string::npos);
    EXPECT_EQ(mg->runnable.plan, *plan);

    // Megatron-DeepSpeed's GPTModelPipe hard-codes partition_method='type:transformer' (issue
    // 47): DeepSpeed counts the blocks only, and the export says it falls back to that.
    auto ds = exportPlan(req, ExportFormat::DeepSpeed);
    ASSERT_TRUE(ds) << ds.error();
    ASSERT_TRUE(ds->fellBack());
    EXPECT_NE(ds->summary().find("partition_method='type:transformer'"), std::string::npos) << ds->summary();
    EXPECT_EQ(ds->runnable.plan.pipelineUnits, PipelineUnits::Layers);
    bool partition = false;
    for (const ExportFile &f : ds->files)
        if (f.name.find(".pipeline.json") != std::string::npos) {
            partition = true;
            const Json j = Json::parse(f.text);
            EXPECT_EQ(j.at("partition_method"), "type:transformer");
            EXPECT_EQ(j.at("blocks_per_stage"), Json(deepSpeedBalancedSplit(pipelineSpan(model).blocks, u.pp)));
        }
    EXPECT_TRUE(partition);

    // The same blocks counted without the embedding and the loss: Megatron-LM's first and
    // last stage sizes, no unit flags.
    Plan blocksOnly = *plan;
    blocksOnly.pipelineUnits = PipelineUnits::Layers;
    req.plan = blocksOnly;
    auto plain = exportPlan(req, ExportFormat::Megatron);
    ASSERT_TRUE(plain) << plain.error();
    EXPECT_EQ(plain->files.front().text.find("--account-for-embedding-in-pipeline-split"), std::string::npos);

    // Interleaved with units: NeMo's keys and the chunk count, no fallback.
    const ModelProfile big = gptModel(126);
    const Topology eight = flatCluster(8, 8, 80e9);
    UniformLayout iv;
    iv.pp = 8;
    iv.schedule = Schedule::Interleaved;
    iv.virtualStages = 4;
    iv.globalBatch = 64;
    iv.seqLength = big.seqLength;
    iv.pipelineUnits = PipelineUnits::LayersEmbeddingLoss;
    auto ip = buildUniformPlan(iv, eight, big);
    ASSERT_TRUE(ip) << ip.error();
    ExportRequest ireq;
    ireq.plan = *ip;
    ireq.topology = eight;
    ireq.model = big;
    auto nemo = exportPlan(ireq, ExportFormat::Nemo);
    ASSERT_TRUE(nemo) << nemo.error();
    EXPECT_FALSE(nemo->fellBack()) << nemo->summary();
    EXPECT_NE(nemo->files.front().text.find("virtual_pipeline_model_parallel_size: 4"), std::string::npos);
    EXPECT_NE(nemo->files.front().text.find("account_for_loss_in_pipeline_split: true"), std::string::npos);
    auto mgi = exportPlan(ireq, ExportFormat::Megatron);
    ASSERT_TRUE(mgi) << mgi.error();
    EXPECT_FALSE(mgi->fellBack()) << mgi->summary();
    EXPECT_NE(mgi->files.front().text.find("--num-virtual-stages-per-pipeline-rank 4"), std::string::npos);

    // An uneven units split: NeMo evens it in units and says so.
    Plan uneven = *plan;
    uneven.stages[0].endLayer += 1;
    uneven.stages[1].firstLayer += 1;
    req.plan = uneven;
    auto evened = exportPlan(req, ExportFormat::Nemo);
    ASSERT_TRUE(evened) << evened.error();
    ASSERT_TRUE(evened->fellBack());
    EXPECT_NE(evened->summary().find("pipeline units"), std::string::npos) << evened->summary();
    EXPECT_EQ(evened->runnable.plan.stages[1].firstLayer, 6);
}

TEST(PipelineUnits, planFileRecordsIt)
{
    const ModelProfile model = gptModel(6);
    const Topology topo = flatCluster(1, 8, 80e9);
    UniformLayout u;
    u.pp = 4;
    u.globalBatch = 8;
    u.seqLength = model.seqLength;
    auto plain = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(plain);
    EXPECT_FALSE(planToJson(*plain).contains("pipeline_units"));  // default files unchanged
    u.pipelineUnits = PipelineUnits::LayersEmbedding;
    auto plan = buildUniformPlan(u, topo, model);
    ASSERT_TRUE(plan);
    Json j = planToJson(*plan);
    EXPECT_EQ(j.at("pipeline_units"), "layers+embedding");
    auto back = planFromJson(j, "p.json");
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(*back, *plan);
    j["pipeline_units"] = "layers+loss";
    auto bad = planFromJson(j, "p.json");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().find("p.json: at pipeline_units: unknown pipeline units \"layers+loss\""), std::string::npos)
        << bad.error();
}
