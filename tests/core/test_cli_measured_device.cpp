// Issue 49: a profile measured on one device and planned on another. The NEST artifact's
// sample (TPU v4 cycle counts, docs/formats.md) planned on H100s used to read "0 FLOP per
// token", "MFU 0.0 %" and apply TPU-v4 times to H100 without a word. The rules
// (core/cost/MeasuredDevice.h): the profile names its device; a cluster of other devices
// gets a warning; a model without FLOPs has an unknown MFU, never 0.
#include "ClusterIO.h"
#include "Evaluator.h"
#include "JsonUtil.h"
#include "MeasuredDevice.h"
#include "ModelIO.h"
#include "PlanBuilder.h"
#include "ProfileIO.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

using namespace nest;
using namespace coretest;

namespace {

const std::string kArtifact = "sample_configs/profiles/ilp_llama2_llama2_mbs_1_sl_4096_dev64.json";
const std::string kExample = "sample_configs/profiles/llama2-7b-example.json";

ModelProfile model(const std::string &fileOrPreset)
{
    auto m = resolveModel(fileOrPreset);
    EXPECT_TRUE(m.ok()) << (m ? "" : m.error());
    return m ? *m : ModelProfile{};
}

Topology cluster(const std::string &name)
{
    auto t = resolveCluster(name);
    EXPECT_TRUE(t.ok()) << (t ? "" : t.error());
    return t ? *t : Topology{};
}

} // namespace

TEST(MeasuredDevice, theArtifactNamesItsDeviceAndGivesNoFlops)
{
    const ModelProfile m = model(sample(kArtifact));
    // Its latencies are TPU v4 cycles / 1.05 GHz (docs/formats.md): the artifact's device.
    EXPECT_EQ(m.measuredOn, "tpuv4-like");
    EXPECT_TRUE(hasMeasuredTimes(m));
    // The file lists no FLOPs at all: not one layer has a forward FLOP count.
    for (const LayerProfile &l : m.layers)
        EXPECT_EQ(l.fwdFlops, 0.0) << l.name;
    EXPECT_FALSE(modelFlopsKnown(m));
}

TEST(MeasuredDevice, warnsOnAnotherDeviceOnly)
{
    const ModelProfile m = model(sample(kArtifact));
    // On the file's own cluster (its TPUv4-like device): nothing to say.
    const auto own = readJsonFile(sample(kArtifact));
    ASSERT_TRUE(own.ok());
    const auto ownCluster = artifactClusterFromJson(*own, kArtifact);
    ASSERT_TRUE(ownCluster.ok()) << ownCluster.error();
    EXPECT_EQ(measuredDeviceWarning(m, *ownCluster), "");
    EXPECT_EQ(measuredDeviceWarning(m, cluster("paper-fattree-64")), "");   // the paper's TPUv4-like preset
    // On H100s: the warning names both devices.
    const std::string w = measuredDeviceWarning(m, cluster("superpod-h100-256"));
    EXPECT_NE(w.find("measured on tpuv4-like"), std::string::npos) << w;
    EXPECT_NE(w.find("h100"), std::string::npos) << w;
    EXPECT_NE(w.find("not rescaled"), std::string::npos) << w;
    // A model built from FLOPs has no measured times: no warning on any cluster.
    EXPECT_EQ(measuredDeviceWarning(model("llama2-7b"), cluster("superpod-h100-256")), "");
}

TEST(MeasuredDevice, aNestProfileSaysItsDeviceWithMeasuredOn)
{
    auto j = readJsonFile(sample(kExample));
    ASSERT_TRUE(j.ok());
    // Without the key: the device is not said, so nothing can be warned of.
    auto plain = profileFromJson(*j, kExample);
    ASSERT_TRUE(plain.ok()) << plain.error();
    EXPECT_EQ(plain->measuredOn, "");
    EXPECT_EQ(measuredDeviceWarning(*plain, cluster("superpod-h100-256")), "");
    Json withDevice = *j;
    withDevice["measured_on"] = "a100-80gb";
    auto p = profileFromJson(withDevice, kExample);
    ASSERT_TRUE(p.ok()) << p.error();
    EXPECT_EQ(p->measuredOn, "a100-80gb");
    EXPECT_TRUE(modelFlopsKnown(*p));   // this one gives fwd_flops
    EXPECT_NE(measuredDeviceWarning(*p, cluster("superpod-h100-256")).find("measured on a100-80gb"), std::string::npos);
    EXPECT_EQ(measuredDeviceWarning(*p, cluster("a100-512")), "");
    // Written back and read again, the device stays.
    auto again = profileFromJson(profileToJson(*p), kExample);
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(again->measuredOn, "a100-80gb");
    withDevice["measured_on"] = 3;
    auto bad = profileFromJson(withDevice, kExample);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().find("measured_on"), std::string::npos) << bad.error();
}

TEST(MeasuredDevice, mfuIsUnknownWithoutFlops)
{
    const ModelProfile m = model(sample(kArtifact));
    const Topology t = cluster("superpod-h100-256");
    UniformLayout u;
    u.tp = 1;
    u.pp = 4;
    u.dp = 16;
    u.microBatch = 1;
    u.globalBatch = m.globalBatch;
    u.seqLength = m.seqLength;
    const auto plan = buildUniformPlan(u, t, m);
    ASSERT_TRUE(plan.ok()) << plan.error();
    const Report r = evaluate(*plan, t, m);
    ASSERT_GT(r.iterationTime, 0);
    EXPECT_EQ(r.modelFlopsPerIteration, 0.0);
    EXPECT_FALSE(mfuKnown(r));
    // The same layout of the FLOP-built Llama-2 7B has a known MFU.
    const ModelProfile built = model("llama2-7b");
    UniformLayout b = u;
    b.globalBatch = built.globalBatch;
    b.seqLength = built.seqLength;
    const auto builtPlan = buildUniformPlan(b, t, built);
    ASSERT_TRUE(builtPlan.ok()) << builtPlan.error();
    EXPECT_TRUE(mfuKnown(evaluate(*builtPlan, t, built)));
}

TEST(MeasuredDevice, theCliWarnsAndSaysMfuIsUnknown)
{
    const coretest::Run r = runCli({"plan", "--cluster", "superpod-h100-256", "--model", sample(kArtifact)});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("nest-cli: warning: the model's times were measured on tpuv4-like, but the cluster's "
                         "devices are h100"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("MFU unknown (the model gives no FLOPs)"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("MFU 0.0 %"), std::string::npos) << r.out;
    // On the file's own cluster: no warning.
    const coretest::Run own = runCli({"plan", "--model", sample(kArtifact)});
    ASSERT_EQ(own.exitCode, 0) << own.err;
    EXPECT_EQ(own.err.find("measured on"), std::string::npos) << own.err;
}
