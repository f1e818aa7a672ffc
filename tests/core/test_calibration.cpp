// Calibration (issue 23): the Megatron FLOP formula against Narayanan et al.'s closed form,
// the calibration file's errors, and what applying a calibration changes (nothing without one).
#include "Calibration.h"
#include "ClusterIO.h"
#include "ModelIO.h"
#include "PlanBuilder.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace nest;

TEST(StepFlops, MegatronFormulaIsNarayanansForGpt)
{
    ModelOptions o;
    o.seqLength = 2048;
    o.globalBatch = 1536;
    auto m = resolveModel("gpt3-175b", o);
    ASSERT_TRUE(m.ok()) << m.error();
    // 72 B s L h^2 (1 + s / 6h + V / 12 L h) (Narayanan et al. SC'21, without recomputation).
    const double B = 1536, s = 2048, L = 96, h = 12288, V = m->vocab;
    const double expected = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
    EXPECT_NEAR(stepFlops(*m, "megatron", 1536, 2048) / expected, 1.0, 1e-3);
    // 6ND: six times the active parameters times the tokens.
    EXPECT_DOUBLE_EQ(stepFlops(*m, "6nd", 1536, 2048), 6 * m->activeParams() * B * s);
}

TEST(CalibrationFile, ErrorsNameThePath)
{
    auto bad = calibrationFromJson(Json::parse(R"({"format": "nest-calibration",
        "parameters": {"h100-sxm-80gb": {"gemm_efficiency": 0.5}}})"), "cal.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().find("cal.json: at parameters.h100-sxm-80gb"), std::string::npos) << bad.error();
    auto range = calibrationFromJson(Json::parse(R"({"format": "nest-calibration",
        "parameters": {"h100-sxm-80gb/megatron-core": {"gemm_efficiency": 1.5}}})"), "cal.json");
    ASSERT_FALSE(range.ok());
    EXPECT_NE(range.error().find("gemm_efficiency"), std::string::npos) << range.error();
}

TEST(CalibrationApply, OverheadScalesTheStageTimeAndNothingElseChangesWithoutIt)
{
    auto t = resolveCluster("paper-spineleaf-64");
    ModelOptions o;
    o.seqLength = 4096;
    o.globalBatch = 512;
    auto m = resolveModel("llama2-7b", o);
    ASSERT_TRUE(t.ok() && m.ok());
    UniformLayout u;
    u.tp = 8;
    u.pp = 2;
    u.dp = 4;
    u.globalBatch = 512;
    u.seqLength = 4096;
    const Plan plan = *buildUniformPlan(u, *t, *m);
    const CostOptions base;
    const Report plain = evaluate(plan, *t, *m, base);
    EXPECT_EQ(evaluate(plan, *t, *m, applyCalibration(base, Calibration{}, *t)).iterationTime, plain.iterationTime);

    Calibration c;
    c.parameters.push_back({"h100-sxm-80gb", "megatron-core", std::nullopt, 0.25});
    const CostOptions cal = applyCalibration(base, c, *t);
    EXPECT_EQ(cal.stepOverhead, 0.25);
    const Report r = evaluate(plan, *t, *m, cal);
    ASSERT_EQ(r.stages.size(), plain.stages.size());
    for (size_t k = 0; k < r.stages.size(); ++k) {
        const StageCost &a = plain.stages[k].cost, &b = r.stages[k].cost;
        // t_stage = (1 + 0.25) x the uncalibrated one; the after-last-micro-batch time unchanged.
        EXPECT_NEAR(b.perMicroBatch, 1.25 * a.perMicroBatch, 1e-12 * a.perMicroBatch);
        EXPECT_NEAR(b.frameworkOverhead, 0.25 * a.perMicroBatch, 1e-12 * a.perMicroBatch);
        EXPECT_EQ(b.iterationExtra, a.iterationExtra);
    }
    // Another framework's entry does not apply.
    c.parameters.front().framework = "deepspeed";
    EXPECT_EQ(applyCalibration(base, c, *t).stepOverhead, 0.0);
}
