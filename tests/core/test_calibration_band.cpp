// The calibration label never contradicts the times (issue 49, point 3): a calibration fitted
// to DeepSpeed runs on A100s changes a megatron-core plan on A100s (the GEMM efficiency is the
// hardware's), so its band must say so; on H100s nothing of it applies and the band stays the
// validation set's; under DeepSpeed on A100s the fit's own residual band applies.
#include "Calibration.h"
#include "ClusterTemplates.h"
#include "ModelErrorBand.h"

#include "CoreTestSupport.h"

using namespace nest;

namespace {

Calibration deepspeedOnA100()
{
    const Json j = Json::parse(R"({"format": "nest-calibration", "version": 1,
        "parameters": {"a100-80gb/deepspeed": {"gemm_efficiency": 0.66, "step_overhead": 0.086}},
        "runs": [{"name": "a", "measured_s": 60.1, "before_s": 51.4, "after_s": 61.0},
                 {"name": "b", "measured_s": 50.2, "before_s": 42.6, "after_s": 50.5},
                 {"name": "c", "measured_s": 44.4, "before_s": 36.7, "after_s": 43.5}]})");
    return calibrationFromJson(j, "cal.json").value();
}

} // namespace

CostOptions megatronCore()
{
    CostOptions o;
    o.framework = Framework::MegatronCore;
    o.stack = Stack::Tuned;
    return o;
}

CostOptions deepspeed()
{
    CostOptions o = megatronCore();
    o.framework = Framework::DeepSpeed;
    return o;
}

TEST(CalibrationBand, gemmFittedUnderAnotherFrameworkIsNamed)
{
    const Topology a100 = clusterPreset("a100-512").value();
    const ErrorBand band = modelErrorBand(megatronCore(), deepspeedOnA100(), a100);
    EXPECT_EQ(band.basis, "megatron-core tuned, 65-512 GPUs band; GEMM efficiency calibrated (3 runs of deepspeed)");
    // The bounds are megatron-core's validation band: the runs say nothing of its overlap.
    const ErrorBand validation = validationErrorBand(Framework::MegatronCore, Stack::Tuned, 512);
    EXPECT_EQ(band.low, validation.low);
    EXPECT_EQ(band.high, validation.high);
    EXPECT_EQ(band.text().find("uncalibrated"), std::string::npos) << band.text();
}

TEST(CalibrationBand, nothingAppliedOnOtherDevices)
{
    const Topology h100 = clusterPreset("superpod-h100-256").value();
    EXPECT_EQ(modelErrorBand(megatronCore(), deepspeedOnA100(), h100),
              validationErrorBand(Framework::MegatronCore, Stack::Tuned, h100.deviceCount()));
    EXPECT_EQ(modelErrorBand(deepspeed(), deepspeedOnA100(), h100),
              validationErrorBand(Framework::DeepSpeed, Stack::Tuned, h100.deviceCount()));
}

TEST(CalibrationBand, ownFrameworkNarrowsToTheFitsResiduals)
{
    // Residuals measured / after: 60.1/61.0 = 0.9852, 50.2/50.5 = 0.9941, 44.4/43.5 = 1.0207:
    // three runs, two fitted parameters, too few for an 80 % order statistic: the scatter of
    // one source's runs, and at least as wide as the residuals.
    const Topology a100 = clusterPreset("a100-512").value();
    const ErrorBand band = modelErrorBand(deepspeed(), deepspeedOnA100(), a100);
    EXPECT_EQ(band.basis, "calibrated (3 runs), band of one source's scatter");
    EXPECT_LE(band.low, 60.1 / 61.0);
    EXPECT_GE(band.high, 44.4 / 43.5);
    EXPECT_EQ(band.low, std::min(withinSourceBand().low, 60.1 / 61.0));
    EXPECT_EQ(band.high, std::max(withinSourceBand().high, 44.4 / 43.5));
}
