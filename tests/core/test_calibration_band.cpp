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

TEST(CalibrationBand, gemmFittedUnderAnotherFrameworkIsNamed)
{
    const Topology a100 = clusterPreset("a100-512").value();
    const ErrorBand band = modelErrorBand(Framework::MegatronCore, deepspeedOnA100(), a100);
    EXPECT_EQ(band.basis, "megatron-core band; GEMM efficiency calibrated (3 runs of deepspeed)");
    // The fraction is megatron-core's validation band: the runs say nothing of its overlap.
    EXPECT_EQ(band.fraction, validationErrorBand(Framework::MegatronCore).fraction);
    EXPECT_EQ(band.text().find("uncalibrated"), std::string::npos) << band.text();
}

TEST(CalibrationBand, nothingAppliedOnOtherDevices)
{
    const Topology h100 = clusterPreset("superpod-h100-256").value();
    EXPECT_EQ(modelErrorBand(Framework::MegatronCore, deepspeedOnA100(), h100),
              validationErrorBand(Framework::MegatronCore));
    EXPECT_EQ(modelErrorBand(Framework::DeepSpeed, deepspeedOnA100(), h100), validationErrorBand(Framework::DeepSpeed));
}

TEST(CalibrationBand, ownFrameworkTakesTheFitsResiduals)
{
    // |61.0/60.1 - 1| = 1.50 %, |50.5/50.2 - 1| = 0.60 %, |43.5/44.4 - 1| = 2.03 %: three runs,
    // two fitted parameters, so the residual band stands, "calibrated (3 runs)".
    const Topology a100 = clusterPreset("a100-512").value();
    const ErrorBand band = modelErrorBand(Framework::DeepSpeed, deepspeedOnA100(), a100);
    EXPECT_EQ(band.basis, "calibrated (3 runs)");
    EXPECT_GT(band.fraction, 0.0150);
    EXPECT_LE(band.fraction, 0.0203);
}
