// Calibration (issue 23): the Megatron FLOP formula against Narayanan et al.'s closed form,
// the calibration file's errors, and what applying a calibration changes (nothing without one).
#include "Fixtures.h"

#include "Calibration.h"
#include "ClusterIO.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "Workspace.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

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
    const Topology t = fixtures::spineleaf64();
    const ModelProfile m = fixtures::llama2_7b(4096, 512);
    const Plan plan = fixtures::uniformPlan(fixtures::uniformLayout(8, 2, 4, 512, 4096), t, m);
    const CostOptions base;
    const Report plain = evaluate(plan, t, m, base);
    EXPECT_EQ(evaluate(plan, t, m, applyCalibration(base, Calibration{}, t)).iterationTime, plain.iterationTime);

    Calibration c;
    c.parameters.push_back({"h100-sxm-80gb", "megatron-core", std::nullopt, 0.25});
    const CostOptions cal = applyCalibration(base, c, t);
    EXPECT_EQ(cal.stepOverhead, 0.25);
    const Report r = evaluate(plan, t, m, cal);
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
    EXPECT_EQ(applyCalibration(base, c, t).stepOverhead, 0.0);
}

namespace {

// The 64-device H100 spine-leaf preset and Llama 2 7B, as a nest-runs row on the cluster and model
// objects (the window's "Add Run").
Json inlineRun(double stepSeconds)
{
    Json run = Json::parse(R"({"name": "inline", "cluster": "paper-spineleaf-64", "model": {"preset": "llama2-7b"},
                               "batch": 512, "seq": 4096, "framework": "megatron-core",
                               "layout": {"tp": 8, "pp": 2, "dp": 4}})");
    run["step_time_s"] = stepSeconds;
    return run;
}

} // namespace

TEST(MeasuredRuns, ClusterAndModelMayBeObjects)
{
    auto t = resolveCluster("paper-spineleaf-64");
    ASSERT_TRUE(t.ok());
    Json run = inlineRun(10.0);
    run["cluster"] = clusterToJson(*t);
    const Json runs{{"format", "nest-runs"}, {"runs", Json::array({run})}};
    auto r = measuredRunsFromJson(runs, "window", "");
    ASSERT_TRUE(r.ok()) << r.error();
    ASSERT_EQ(r->size(), 1u);
    EXPECT_EQ((*r)[0].topology.deviceCount(), 64);
    EXPECT_EQ((*r)[0].model.globalBatch, 512);   // the row's batch and sequence, not the preset's
    EXPECT_EQ((*r)[0].model.seqLength, 4096);
    EXPECT_EQ((*r)[0].measuredSeconds, 10.0);
    // A bad model object names its path inside the row.
    run["model"] = Json{{"preset", "no-such-model"}};
    auto bad = measuredRunsFromJson(Json{{"format", "nest-runs"}, {"runs", Json::array({run})}}, "window", "");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().find("window: at runs[0].model"), std::string::npos) << bad.error();
}

TEST(MeasuredRuns, OneRunRecoversTheStepOverheadItWasGeneratedWith)
{
    // The truth: the evaluator's own time with a 20 % step overhead; the fit starts at 0.
    const Json runs{{"format", "nest-runs"}, {"runs", Json::array({inlineRun(1.0)})}};
    auto probe = measuredRunsFromJson(runs, "window", "");
    ASSERT_TRUE(probe.ok()) << probe.error();
    CostOptions truth;
    truth.stepOverhead = 0.2;
    const MeasuredRun &m = probe->front();
    Json generated = inlineRun(evaluate(m.plan, m.topology, m.model, truth).iterationTime);
    auto measured = measuredRunsFromJson(Json{{"format", "nest-runs"}, {"runs", Json::array({generated})}}, "w", "");
    ASSERT_TRUE(measured.ok());
    auto fit = fitCalibration(*measured, {"step_overhead"});
    ASSERT_TRUE(fit.ok()) << fit.error();
    ASSERT_EQ(fit->parameters.size(), 1u);
    ASSERT_TRUE(fit->parameters[0].stepOverhead.has_value());
    EXPECT_NEAR(*fit->parameters[0].stepOverhead, 0.2, 0.002);
    // Two free parameters and one run: refused.
    EXPECT_FALSE(fitCalibration(*measured, {"gemm_efficiency", "step_overhead"}).ok());
}

TEST(ErrorBand, ConformalRuleOnAHandMadeSet)
{
    // 19 residuals (given unsorted): sorted 0.70 0.80 0.85 0.90 0.92 0.94 0.96 0.98 1.00 1.01
    // 1.02 1.04 1.06 1.08 1.10 1.15 1.20 1.30 1.60. k = ceil(0.9 x 20) = 18: high = the 18th
    // smallest = 1.30, low = the (19 + 1 - 18) = 2nd smallest = 0.80.
    const std::vector<double> r19 = {1.60, 0.70, 1.02, 0.92, 1.30, 0.85, 1.00, 1.20, 0.96, 1.04,
                                     0.80, 1.10, 0.94, 1.06, 0.90, 1.15, 0.98, 1.08, 1.01};
    const auto band = conformalBand(r19, "hand");
    ASSERT_TRUE(band.has_value());
    EXPECT_EQ(band->low, 0.80);
    EXPECT_EQ(band->high, 1.30);
    EXPECT_EQ(band->basis, "hand");
    // 30 residuals 1.00, 1.01, ..., 1.29: k = ceil(0.9 x 31) = ceil(27.9) = 28: the 28th
    // smallest, 1.27, and the (31 - 28) = 3rd, 1.02.
    std::vector<double> r30;
    for (int i = 0; i < 30; ++i)
        r30.push_back(1.0 + 0.01 * i);
    const auto b30 = conformalBand(r30, "");
    ASSERT_TRUE(b30.has_value());
    EXPECT_NEAR(b30->high, 1.27, 1e-12);
    EXPECT_NEAR(b30->low, 1.02, 1e-12);
    // 29 residuals: k = ceil(0.9 x 30) = 27 exactly: the 27th smallest, 1.26, and the (30 - 27) = 3rd, 1.02.
    r30.pop_back();
    const auto b29 = conformalBand(r30, "");
    ASSERT_TRUE(b29.has_value());
    EXPECT_NEAR(b29->high, 1.26, 1e-12);
    EXPECT_NEAR(b29->low, 1.02, 1e-12);
    // 9 residuals: k = ceil(0.9 x 10) = 9 = n: the smallest and the largest.
    const std::vector<double> r9 = {1.1, 0.9, 1.0, 1.05, 0.95, 1.2, 0.85, 1.02, 0.98};
    const auto b9 = conformalBand(r9, "");
    ASSERT_TRUE(b9.has_value());
    EXPECT_EQ(b9->low, 0.85);
    EXPECT_EQ(b9->high, 1.2);
    // 8 residuals: k = ceil(0.9 x 9) = 9 > 8: no 80 % band.
    EXPECT_FALSE(conformalBand({1.1, 0.9, 1.0, 1.05, 0.95, 1.2, 0.85, 1.02}, "").has_value());
    EXPECT_FALSE(conformalBand({}, "").has_value());
}

TEST(ErrorBand, TextsAndScaleBuckets)
{
    // The issue's own example: 20.1 s with the bounds 0.94 x 20.1 = 18.894 and 1.164 x 20.1 = 23.396.
    const ErrorBand b{0.94, 1.164, "megatron-core tuned, 65-512 GPUs, uncalibrated"};
    EXPECT_EQ(b.describe(20.1), "20.1 s (18.9-23.4 s, megatron-core tuned, 65-512 GPUs, uncalibrated)");
    EXPECT_EQ(b.bounds(20.1), "18.9-23.4 s");
    EXPECT_EQ(b.text(), "-6 % to +16 %, megatron-core tuned, 65-512 GPUs, uncalibrated");
    // The decimals follow the upper bound: 0.9 x 15.5 = 13.95, 1.95 x 15.5 = 30.225; 0.9 x
    // 0.0125 = 0.01125, 1.1 x 0.0125 = 0.01375.
    EXPECT_EQ((ErrorBand{0.9, 1.95, ""}.bounds(15.5)), "14.0-30.2 s");
    EXPECT_EQ((ErrorBand{0.9, 1.1, ""}.bounds(0.0125)), "0.0113-0.0138 s");
    EXPECT_STREQ(scaleBucket(8), "<=64");
    EXPECT_STREQ(scaleBucket(64), "<=64");
    EXPECT_STREQ(scaleBucket(65), "65-512");
    EXPECT_STREQ(scaleBucket(512), "65-512");
    EXPECT_STREQ(scaleBucket(513), ">512");
}

TEST(ErrorBand, UncalibratedCellsAndFallbacks)
{
    const ErrorBand mc = modelErrorBand(Framework::MegatronCore, Stack::Tuned, 128, std::nullopt);
    EXPECT_EQ(mc.basis, "megatron-core tuned, 65-512 GPUs, uncalibrated");
    EXPECT_LT(mc.low, mc.high);
    EXPECT_GE(validationRows(Framework::MegatronCore, Stack::Tuned, 128), 9);   // the rule's minimum
    // torchtitan has no validation rows of its own: the band of its stack's rows, said so.
    const ErrorBand tt = validationErrorBand(Framework::Torchtitan, Stack::Tuned, 8);
    EXPECT_EQ(tt.basis.rfind("torchtitan tuned, <=64 GPUs, uncalibrated, band of all ", 0), 0u) << tt.basis;
    EXPECT_GE(validationRows(Framework::Torchtitan, Stack::Tuned, 8), 9);
}

TEST(ErrorBand, CalibrationNarrowsToItsResiduals)
{
    const ErrorBand scatter = withinSourceBand();
    EXPECT_LT(scatter.low, 1.0);
    EXPECT_GT(scatter.high, 1.0);
    Calibration c;
    c.parameters.push_back({"h100-sxm-80gb", "megatron-core", std::nullopt, 0.1});
    // One run, one parameter: its residual is zero by construction; the scatter of one
    // source's runs stands.
    c.runs = {{"a", 10, 12, 10}};
    const ErrorBand one = modelErrorBand(Framework::MegatronCore, Stack::Tuned, 64, c);
    EXPECT_EQ(one.basis, "calibrated (1 run), band of one source's scatter");
    EXPECT_EQ(one.low, scatter.low);
    EXPECT_EQ(one.high, scatter.high);
    // Three runs, one parameter: residuals measured / after = 10/9.8, 10/10.1, 15/10 = 1.5.
    // Too few for an 80 % order statistic: the scatter band, widened to the 1.5 outside it.
    c.runs = {{"a", 10, 12, 9.8}, {"b", 10, 11, 10.1}, {"c", 15, 13, 10}};
    const ErrorBand three = modelErrorBand(Framework::MegatronCore, Stack::Tuned, 64, c);
    EXPECT_EQ(three.basis, "calibrated (3 runs), band of one source's scatter");
    EXPECT_EQ(three.high, 1.5);
    EXPECT_EQ(three.low, std::min(scatter.low, 10 / 10.1));
    // 19 runs: the residuals' own split-conformal band (see ConformalRuleOnAHandMadeSet):
    // measured 10 r, after 10, r from the hand-made set: 0.80 and 1.30.
    const double r[] = {1.60, 0.70, 1.02, 0.92, 1.30, 0.85, 1.00, 1.20, 0.96, 1.04,
                        0.80, 1.10, 0.94, 1.06, 0.90, 1.15, 0.98, 1.08, 1.01};
    c.runs.clear();
    for (double x : r)
        c.runs.push_back({"run", 10 * x, 10, 10});
    const ErrorBand many = modelErrorBand(Framework::MegatronCore, Stack::Tuned, 64, c);
    EXPECT_EQ(many.basis, "calibrated (19 runs)");
    EXPECT_NEAR(many.low, 0.80, 1e-12);
    EXPECT_NEAR(many.high, 1.30, 1e-12);
    // A calibration of another framework leaves this one's band alone.
    EXPECT_EQ(modelErrorBand(Framework::DeepSpeed, Stack::Tuned, 64, c),
              validationErrorBand(Framework::DeepSpeed, Stack::Tuned, 64));
}

TEST(ErrorBand, WithinModelErrorWhenTheBandsIntersect)
{
    const ErrorBand wide{0.9, 1.2, "x"};
    // 10.0 s reads 9.0-12.0 s; 13.0 s reads 11.7-15.6 s: they meet.
    EXPECT_TRUE(withinModelError(10.0, wide, 13.0, wide));
    // 14.0 s reads 12.6-16.8 s: above 12.0, apart.
    EXPECT_FALSE(withinModelError(10.0, wide, 14.0, wide));
    EXPECT_FALSE(withinModelError(14.0, wide, 10.0, wide));   // symmetric
    // Asymmetric bands: 10.0 s with [1.0, 1.1] reads 10.0-11.0 s; 11.5 s with [0.95, 1.0]
    // reads 10.925-11.5 s (meets); 11.7 s reads 11.115-11.7 s (apart).
    const ErrorBand up{1.0, 1.1, "up"}, down{0.95, 1.0, "down"};
    EXPECT_TRUE(withinModelError(10.0, up, 11.5, down));
    EXPECT_FALSE(withinModelError(10.0, up, 11.7, down));
    EXPECT_FALSE(withinModelError(11.7, down, 10.0, up));
    EXPECT_FALSE(withinModelError(0.0, wide, 10.0, wide));   // no time: never "the same"
}

TEST(WorkspaceCalibration, FileOrObjectRoundTripsAndBadValuesNameThePath)
{
    const std::string dir = ::testing::TempDir() + "nest-ws-cal";
    std::filesystem::create_directories(dir);
    Calibration c;
    c.parameters.push_back({"h100-sxm-80gb", "megatron-core", 0.7, 0.1});
    c.runs = {{"a", 10, 12, 10.2}};
    {
        std::ofstream(dir + "/cal.json") << c.toJson().dump();
    }
    auto t = resolveCluster("paper-spineleaf-64");
    ASSERT_TRUE(t.ok());
    Json ws{{"format", "nest-workspace"}, {"cluster", clusterToJson(*t)}, {"calibration", "cal.json"}};
    // A relative file is read from the workspace's folder, and saved back as its name.
    auto w = workspaceFromJson(ws, dir + "/a.nestws.json");
    ASSERT_TRUE(w.ok()) << w.error();
    ASSERT_TRUE(w->calibration.has_value());
    EXPECT_EQ(*w->calibration, c);
    EXPECT_EQ(workspaceToJson(*w).at("calibration"), "cal.json");
    // Inline: the object itself, saved back inline.
    ws["calibration"] = c.toJson();
    auto inl = workspaceFromJson(ws, "inline.nestws.json");
    ASSERT_TRUE(inl.ok()) << inl.error();
    EXPECT_EQ(*inl->calibration, c);
    EXPECT_EQ(workspaceToJson(*inl).at("calibration"), c.toJson());
    // No calibration: no key.
    Workspace none = *inl;
    none.calibration.reset();
    EXPECT_FALSE(workspaceToJson(none).contains("calibration"));
    // Bad values name the workspace and the path.
    ws["calibration"] = 3;
    auto bad = workspaceFromJson(ws, "w.nestws.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().find("w.nestws.json: at calibration"), std::string::npos) << bad.error();
    ws["calibration"] = "missing.json";
    bad = workspaceFromJson(ws, dir + "/w.nestws.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().find("missing.json"), std::string::npos) << bad.error();
    Json wrong = c.toJson();
    wrong["parameters"]["h100-sxm-80gb/megatron-core"]["gemm_efficiency"] = 2.0;
    ws["calibration"] = wrong;
    bad = workspaceFromJson(ws, "w.nestws.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().find("w.nestws.json: at calibration.parameters"), std::string::npos) << bad.error();
}

namespace {

// One run of llama2-7b (seq 2048, 16 samples per device in micro-batches of 1) on `dp`
// devices joined by one `fabricGBps` tier.
MeasuredRun dataParallelRun(int dp, double fabricGBps, Framework framework)
{
    DeviceSpec dev{"h100-sxm-80gb", 989e12, 80e9, 3.35e12, 0.0, ""};
    const Topology t = Topology::uniform("t", dev, {{"cluster", dp, {fabricGBps * 1e9, 5e-6, 1}}});
    ModelOptions o;
    o.seqLength = 2048;
    o.globalBatch = 16 * dp;
    auto m = resolveModel("llama2-7b", o);
    EXPECT_TRUE(m.ok());
    UniformLayout u;
    u.dp = dp;
    u.globalBatch = 16 * dp;
    u.seqLength = 2048;
    MeasuredRun r;
    r.name = "dp" + std::to_string(dp);
    r.topology = t;
    r.model = *m;
    r.plan = *buildUniformPlan(u, t, *m);
    r.framework = framework;
    CostOptions c;
    c.framework = framework;
    r.measuredSeconds = 1.1 * evaluate(r.plan, t, *m, c).iterationTime;
    return r;
}

// -d ln T / d ln eta by the evaluator at two efficiencies (the derivation the choice rests on,
// computed here from evaluate() alone).
double gemmShareByHand(const MeasuredRun &r)
{
    CostOptions a;
    a.framework = r.framework;
    a.matmulEfficiency = defaultMatmulEfficiency(r.topology.spec(0));
    CostOptions b = a;
    b.matmulEfficiency *= 1.001;
    const double ta = evaluate(r.plan, r.topology, r.model, a).iterationTime;
    const double tb = evaluate(r.plan, r.topology, r.model, b).iterationTime;
    return -std::log(tb / ta) / std::log(1.001);
}

} // namespace

TEST(IdentifiedFitParameters, OneRunFitsWhatItDetermines)
{
    // Issue 50, point 5. Compute-bound: 8 GPUs on a 400 GB/s tier, the gradient reduction
    // behind the backward: the GEMMs are most of the step, so the GEMM efficiency is fitted alone.
    const MeasuredRun fast = dataParallelRun(8, 400, Framework::MegatronCore);
    ASSERT_GT(gemmShareByHand(fast), 0.5);
    auto one = identifiedFitParameters({fast});
    ASSERT_TRUE(one.ok()) << one.error();
    EXPECT_EQ(one->parameters, std::vector<std::string>{"gemm_efficiency"});
    EXPECT_NE(one->reason.find("1 run identifies 1 parameter"), std::string::npos) << one->reason;
    EXPECT_NE(one->reason.find("compute-bound"), std::string::npos) << one->reason;

    // Communication-bound: the serial profile's exposed fp32 all-reduce of 7e9 gradients over
    // 1 GB/s (tens of seconds) dwarfs the compute: the step overhead is what the run measures.
    const MeasuredRun slow = dataParallelRun(8, 1, Framework::Serial);
    ASSERT_LT(gemmShareByHand(slow), 0.5);
    auto other = identifiedFitParameters({slow});
    ASSERT_TRUE(other.ok()) << other.error();
    EXPECT_EQ(other->parameters, std::vector<std::string>{"step_overhead"});
    // And the fit then runs on that one parameter: the run is matched.
    auto fitted = fitCalibration({slow}, other->parameters);
    ASSERT_TRUE(fitted.ok()) << fitted.error();
    EXPECT_NEAR(fitted->runs.front().afterSeconds / slow.measuredSeconds, 1.0, 1e-4);

    // As many runs as default parameters (one device type, one framework: 2): both, no reason.
    auto both = identifiedFitParameters({fast, dataParallelRun(4, 400, Framework::MegatronCore)});
    ASSERT_TRUE(both.ok()) << both.error();
    EXPECT_EQ(both->parameters, calibrationParameterNames());
    EXPECT_TRUE(both->reason.empty());
    EXPECT_FALSE(identifiedFitParameters({}).ok());
}
