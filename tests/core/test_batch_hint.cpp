// batchSizeHint (core/studies/BatchHint.h): the hint that a global batch too small for the
// cluster is what holds MFU down (issue 25 point 5), on bert-large plans on 16 V100 whose
// devices used and micro-batch counts are known by hand.
#include "BatchHint.h"
#include "ClusterIO.h"
#include "Evaluator.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "PlanComparison.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace nest;
using coretest::contains;

namespace {

struct Evaluated {
    Plan plan;
    Report report;
};

Evaluated evaluated(int tp, int pp, int dp, int batch, int microBatch = 1)
{
    const Topology topo = resolveCluster("paper-v100-16").value();
    ModelOptions options;
    options.globalBatch = batch;
    const ModelProfile model = resolveModel("bert-large", options).value();
    UniformLayout u;
    u.tp = tp;
    u.pp = pp;
    u.dp = dp;
    u.microBatch = microBatch;
    u.globalBatch = batch;
    u.seqLength = model.seqLength;
    Evaluated e{buildUniformPlan(u, topo, model).value(), {}};
    e.report = evaluate(e.plan, topo, model);
    return e;
}

} // namespace

// 8 of 16 devices used (tp 2 x pp 1 x dp 4) at batch 8: the hint names the 8 idle devices.
TEST(BatchHint, idleDevicesAtASmallBatch)
{
    const Evaluated e = evaluated(2, 1, 4, 8);
    ASSERT_TRUE(e.report.feasible);
    ASSERT_EQ(e.report.devicesUsed, 8);
    const std::string hint = batchSizeHint(e.plan, e.report, 16);
    ASSERT_TRUE(contains(hint, "global batch (8 samples, 0.5 per device)")) << hint;
    ASSERT_TRUE(contains(hint, "leaves 8 of them idle")) << hint;
    ASSERT_TRUE(contains(hint, "larger global batch")) << hint;
}

// All 16 devices, pp 4 x dp 4 at batch 4 with micro-batch 1: one micro-batch per replica for
// four stages, a bubble of 3 / (1 + 3) = 75 % in 1F1B terms (well above 20 %).
TEST(BatchHint, aStarvedPipeline)
{
    const Evaluated e = evaluated(1, 4, 4, 4);
    ASSERT_TRUE(e.report.feasible);
    ASSERT_EQ(e.report.devicesUsed, 16);
    ASSERT_EQ(e.plan.numMicroBatches(), 1);
    const double bubble = iterationSplit(e.plan, e.report).bubble / e.report.iterationTime;
    ASSERT_GE(bubble, 0.20);
    const std::string hint = batchSizeHint(e.plan, e.report, 16);
    ASSERT_TRUE(contains(hint, "1 micro-batch for 4 pipeline stages")) << hint;
}

// No hint when the batch is at least the device count, when the pipeline has enough
// micro-batches and every device works, or for an infeasible plan.
TEST(BatchHint, quietWhenTheBatchIsNotTheLimit)
{
    const Evaluated big = evaluated(2, 1, 4, 64);   // 8 devices idle, but 64 >= 16 samples
    ASSERT_EQ(big.report.devicesUsed, 8);
    ASSERT_EQ(batchSizeHint(big.plan, big.report, 16), "");
    const Evaluated flat = evaluated(4, 1, 4, 8);   // all 16, no pipeline, batch 8 < 16
    ASSERT_EQ(flat.report.devicesUsed, 16);
    ASSERT_EQ(batchSizeHint(flat.plan, flat.report, 16), "");
    Evaluated bad = evaluated(2, 1, 4, 8);
    bad.report.feasible = false;
    ASSERT_EQ(batchSizeHint(bad.plan, bad.report, 16), "");
}
