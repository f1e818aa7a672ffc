// The whole-cluster memory bound (issue 49, point 4): a model whose weights, gradients and
// optimizer state exceed every device's memory together is refused before any plan space or
// table exists. The bound counts the gradients (it counted weights and optimizer alone, so a
// 30,000-layer model between the two searched for minutes before saying "nothing fits").
// Expected values are hand computations from the published shapes and data sheets.
#include "ClusterTemplates.h"
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "NestPlanner.h"
#include "PlanSpace.h"

#include "CoreTestSupport.h"

using namespace nest;

namespace {

// A Llama-shaped model, thin and deep: hidden 224, 7 heads of 32, SwiGLU 592, vocab 32000.
// Parameters by hand: per layer 4 x 224^2 (q, k, v, o) + 3 x 224 x 592 (gate, up, down) +
// 2 x 224 (two RMSNorms) = 200704 + 397824 + 448 = 598976; embeddings 2 x 32000 x 224
// (untied) = 14336000; final norm 224.
ModelConfig thinLlama(int layers)
{
    ModelConfig c = modelPreset("llama2-7b").value();
    c.name = "thin";
    c.layers = layers;
    c.hidden = 224;
    c.heads = 7;
    c.kvHeads = 7;
    c.ffnHidden = 592;
    return c;
}

double thinParams(int layers) { return 598976.0 * layers + 14336000.0 + 224.0; }

// 8 V100-32GB (32 GiB each, data sheet), 1 GB runtime overhead each, no headroom.
constexpr double kUsablePerV100 = 32.0 * 1024 * 1024 * 1024 - 1e9;

} // namespace

TEST(MemoryRefusal, parametersByHand)
{
    EXPECT_DOUBLE_EQ(buildProfile(thinLlama(30000)).totalParams(), thinParams(30000));
}

TEST(MemoryRefusal, bytesPerParameterPerFramework)
{
    // BF16 weights (2 B) + the framework's gradient buffer + Adam's fp32 master weights and
    // two moments (12 B): megatron-core as its recipes run it keeps bf16 gradients (2 B), as its
    // defaults run it fp32 (4 B, accumulate_allreduce_grads_in_fp32); megatron-lm fp32 (4 B).
    const ModelProfile m = buildProfile(thinLlama(4));
    CostOptions co;
    co.framework = Framework::MegatronCore;
    EXPECT_DOUBLE_EQ(trainingStateBytesPerParam(m, co), 2 + 4 + 12);
    co.stack = Stack::Tuned;
    EXPECT_DOUBLE_EQ(trainingStateBytesPerParam(m, co), 2 + 2 + 12);
    co.framework = Framework::MegatronLM;
    EXPECT_DOUBLE_EQ(trainingStateBytesPerParam(m, co), 2 + 4 + 12);
    co.optimizerBytesPerParam = 6;  // --optimizer-dtype bf16
    EXPECT_DOUBLE_EQ(trainingStateBytesPerParam(m, co), 2 + 4 + 6);
    co.gradBytesPerParam = 4;       // an explicit gradient width wins over the framework's
    co.framework = Framework::MegatronCore;
    EXPECT_DOUBLE_EQ(trainingStateBytesPerParam(m, co), 2 + 4 + 6);
}

TEST(MemoryRefusal, thirtyThousandLayersOnEightGpusBeforeAnySearch)
{
    // 30,000 layers: 17.98e9 parameters x 16 B = 287.7 GB > 8 x 33.36 GB = 266.9 GB. Counting
    // weights and optimizer alone (14 B: 251.8 GB) the bound let it through, and the search
    // ran past 300 s and 3.9 GB before it could say nothing fits.
    const Topology topo = clusterPreset("paper-v100-8").value();
    const ModelProfile model = buildProfile(thinLlama(30000));
    const double state = thinParams(30000) * 16;
    ASSERT_GT(state, 8 * kUsablePerV100);
    ASSERT_LT(thinParams(30000) * 14, 8 * kUsablePerV100);
    SearchOptions o;
    o.cost.stack = Stack::Tuned;  // 16 B per parameter: bf16 gradients
    const PlanResult r = NestPlanner().plan(topo, model, o);
    ASSERT_FALSE(r.found);
    EXPECT_NE(r.message.find("whatever the plan"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("x 16 B = 288 GB"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("all 8 devices (267 GB usable"), std::string::npos) << r.message;
    // Nothing was searched: no outer point, no state.
    EXPECT_EQ(r.stats.configs, 0);
    EXPECT_EQ(r.stats.states, 0);
    EXPECT_EQ(r.stats.pruned, 0);
}

TEST(MemoryRefusal, justBelowTheBoundIsNotRefusedByIt)
{
    // The largest layer count whose state fits the cluster: floor((8 x usable / 16 - 14336224)
    // / 598976) layers; one more is refused.
    const double perLayer = 598976.0 * 16;
    const int fits = static_cast<int>((8 * kUsablePerV100 - (14336000.0 + 224.0) * 16) / perLayer);
    const Topology topo = clusterPreset("paper-v100-8").value();
    CostOptions co;
    co.stack = Stack::Tuned;  // 16 B per parameter: bf16 gradients
    EXPECT_EQ(wholeClusterMemoryProblem(topo, buildProfile(thinLlama(fits)), co), "");
    EXPECT_NE(wholeClusterMemoryProblem(topo, buildProfile(thinLlama(fits + 1)), co), "");
}

TEST(MemoryRefusal, headroomAndOverheadCountPerDevice)
{
    // 10 % headroom: 8 x (0.9 x 32 GiB - 1 GB) usable.
    const Topology topo = clusterPreset("paper-v100-8").value();
    CostOptions co;
    co.stack = Stack::Tuned;  // 16 B per parameter: bf16 gradients
    co.memoryHeadroom = 0.1;
    const double usable = 8 * (0.9 * 32.0 * 1024 * 1024 * 1024 - 1e9);
    const int fits = static_cast<int>((usable - (14336000.0 + 224.0) * 16) / (598976.0 * 16));
    EXPECT_EQ(wholeClusterMemoryProblem(topo, buildProfile(thinLlama(fits)), co), "");
    EXPECT_NE(wholeClusterMemoryProblem(topo, buildProfile(thinLlama(fits + 1)), co), "");
}
