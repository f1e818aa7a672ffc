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

TEST(ErrorBand, UncalibratedCalibratedAndExactlyDetermined)
{
    // The validation band of the default profile; torchtitan has no rows of its own.
    const ErrorBand mc = modelErrorBand(Framework::MegatronCore, std::nullopt);
    EXPECT_EQ(mc.basis, "megatron-core, uncalibrated");
    EXPECT_GT(mc.fraction, 0.0);
    EXPECT_GT(validationRows(Framework::MegatronCore), 0);
    EXPECT_EQ(validationRows(Framework::Torchtitan), 0);
    EXPECT_NE(modelErrorBand(Framework::Torchtitan, std::nullopt).basis.find("no validation rows"), std::string::npos);
    // 20.1 s with ±8 %: the issue's own example of the text.
    const ErrorBand eight{0.08, "megatron-core, uncalibrated"};
    EXPECT_EQ(eight.describe(20.1), "20.1 s (±8 %, megatron-core, uncalibrated)");

    // Three runs, one fitted parameter: the band is the 90th percentile of the residuals,
    // nearest rank: ceil(0.9 x 3) = 3rd smallest of |-2 %|, |+1 %|, |+5 %| = 5 %.
    Calibration c;
    c.parameters.push_back({"h100-sxm-80gb", "megatron-core", std::nullopt, 0.1});
    c.runs = {{"a", 10, 12, 9.8}, {"b", 10, 11, 10.1}, {"c", 10, 13, 10.5}};
    const ErrorBand cal = modelErrorBand(Framework::MegatronCore, c);
    EXPECT_NEAR(cal.fraction, 0.05, 1e-12);
    EXPECT_EQ(cal.basis, "calibrated (3 runs)");
    // A calibration of another framework leaves this one's band alone.
    EXPECT_EQ(modelErrorBand(Framework::DeepSpeed, c), validationErrorBand(Framework::DeepSpeed));
    // One run, one parameter: the residual is zero by construction; the validation band stays.
    c.runs.resize(1);
    const ErrorBand exact = modelErrorBand(Framework::MegatronCore, c);
    EXPECT_EQ(exact.fraction, mc.fraction);
    EXPECT_EQ(exact.basis, "calibrated (1 run), band uncalibrated");
}

TEST(ErrorBand, WithinModelErrorUsesTheLargerBandOfTheFaster)
{
    const ErrorBand five{0.05, "x"}, ten{0.10, "y"};
    // 10.0 s vs 10.4 s: 4 % of the faster, inside 5 %.
    EXPECT_TRUE(withinModelError(10.0, five, 10.4, five));
    // 10.0 s vs 10.8 s: 8 %, outside 5 % but inside the other plan's 10 %.
    EXPECT_FALSE(withinModelError(10.0, five, 10.8, five));
    EXPECT_TRUE(withinModelError(10.0, five, 10.8, ten));
    EXPECT_TRUE(withinModelError(10.8, ten, 10.0, five));   // symmetric
    EXPECT_FALSE(withinModelError(0.0, ten, 10.0, ten));    // no time: never "the same"
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
