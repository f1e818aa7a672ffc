// The cluster sweep (core/studies/ClusterSweep.h): withParameter changes exactly one tier (its
// level and that level's overrides, the rest of the topology equal); sweepValues by hand;
// runSweep gives one point per value and one run per planner, each run's report the
// evaluator's on the swept cluster; more spine oversubscription never raises NEST's
// throughput (NEST is exact over its space and every link only gets slower); cancel keeps
// the finished points only; out-of-range values are refused with a message.
#include "ClusterSweep.h"
#include "ModelIO.h"
#include "PlannerRegistry.h"

#include "CoreTestSupport.h"

#include <cmath>
#include <mutex>
#include <sstream>

using namespace nest;

namespace {

// 16 H100: 4 per node, 2 nodes per rack, 2 racks under a spine with slow uplinks, so
// that traffic across the spine is what limits a plan.
Topology spineLeaf16(double spineOversub = 1)
{
    const DeviceSpec d = devicePreset("h100-sxm-80gb").value();
    return Topology::uniform("spine-leaf-16", d,
                             {{"node", 4, {400e9, 1e-6, 1}},
                              {"rack", 2, {50e9, 3e-6, 1}},
                              {"spine", 2, {12.5e9, 6e-6, spineOversub}}});
}

// The same with an override on the first rack (older, slower leaf uplinks).
Topology withRackOverride()
{
    Topology t = spineLeaf16(2);
    for (TopoGroup &g : t.groups)
        if (g.level == 1) {
            g.linkOverride = LinkParams{20e9, 4e-6, 1.5};
            break;
        }
    return t;
}

// Llama-2 7B cut to 2 layers, short sequences, a small batch: plans in milliseconds.
ModelProfile smallModel()
{
    const Json j = {{"preset", "llama2-7b"}, {"layers", 2}, {"seq_length", 1024}, {"global_batch", 16}};
    return modelFromJson(j, "test").value();
}

SearchOptions smallOptions()
{
    SearchOptions o;
    o.microBatches = {1, 2};
    o.schedules = {Schedule::OneFOneB};
    o.cpCandidates = {1};
    o.evaluationBudget = 150;  // mcmc
    return o;
}

const SweepParameter kSpineOversub{2, LinkField::Oversubscription};

} // namespace

TEST(ClusterSweep, labelsAndUnits)
{
    const Topology t = spineLeaf16();
    ASSERT_EQ(kSpineOversub.label(t), std::string("spine oversubscription"));
    ASSERT_EQ((SweepParameter{1, LinkField::Bandwidth}.label(t)), std::string("rack bandwidth (GB/s)"));
    ASSERT_EQ((SweepParameter{0, LinkField::Latency}.label(t)), std::string("node latency (us)"));
    ASSERT_EQ((SweepParameter{9, LinkField::Latency}.label(t)), std::string("level 9 latency (us)"));
    ASSERT_QFUZZY_EQ(displayValue(LinkField::Bandwidth, 25e9), 25.0);
    ASSERT_QFUZZY_EQ(displayValue(LinkField::Latency, 5e-6), 5.0);
    ASSERT_QFUZZY_EQ(displayValue(LinkField::Oversubscription, 3.0), 3.0);
    ASSERT_QFUZZY_EQ(fromDisplayValue(LinkField::Bandwidth, 12.5), 12.5e9);
    ASSERT_QFUZZY_EQ(fromDisplayValue(LinkField::Latency, 2.0), 2e-6);
}

TEST(ClusterSweep, parametersListTheCrossedLevels)
{
    const Topology t = spineLeaf16(3);
    const auto params = sweepParameters(t);
    // node: bandwidth, latency; rack and spine: bandwidth, latency, oversubscription.
    ASSERT_EQ(params.size(), size_t(8));
    ASSERT_EQ(params[0].first, (SweepParameter{0, LinkField::Bandwidth}));
    ASSERT_QFUZZY_EQ(params[0].second, 400e9);
    ASSERT_EQ(params[1].first, (SweepParameter{0, LinkField::Latency}));
    ASSERT_QFUZZY_EQ(params[1].second, 1e-6);
    ASSERT_EQ(params[7].first, kSpineOversub);
    ASSERT_QFUZZY_EQ(params[7].second, 3.0);
    for (const auto &[p, value] : params)
        ASSERT_TRUE(!(p.level == 0 && p.field == LinkField::Oversubscription));

    // A spine above a single rack carries no traffic: nothing to sweep there.
    const DeviceSpec d = devicePreset("h100-sxm-80gb").value();
    const Topology lone = Topology::uniform("lone", d, {{"node", 4, {400e9, 1e-6, 1}},
                                                       {"rack", 2, {50e9, 3e-6, 1}},
                                                       {"spine", 1, {12.5e9, 6e-6, 2}}});
    const auto few = sweepParameters(lone);
    ASSERT_EQ(few.size(), size_t(5));
    for (const auto &[p, value] : few)
        ASSERT_TRUE(p.level < 2);
}

TEST(ClusterSweep, withParameterChangesExactlyOneTier)
{
    const Topology base = withRackOverride();
    int overridden = -1;
    for (int g = 0; g < static_cast<int>(base.groups.size()); ++g)
        if (base.groups[g].linkOverride)
            overridden = g;
    ASSERT_TRUE(overridden >= 0);

    const Result<Topology> swept = withParameter(base, {1, LinkField::Bandwidth}, 80e9);
    ASSERT_TRUE(swept.ok()) << swept.error().c_str();
    ASSERT_QFUZZY_EQ(swept->levels[1].link.bandwidth, 80e9);
    ASSERT_QFUZZY_EQ(swept->groups[overridden].linkOverride->bandwidth, 80e9);
    // The override keeps its other fields.
    ASSERT_QFUZZY_EQ(swept->groups[overridden].linkOverride->latency, 4e-6);
    ASSERT_QFUZZY_EQ(swept->groups[overridden].linkOverride->oversubscription, 1.5);
    // Undo exactly those two numbers: the rest of the topology is unchanged.
    Topology back = *swept;
    ASSERT_TRUE(!(back == base));
    back.levels[1].link.bandwidth = base.levels[1].link.bandwidth;
    back.groups[overridden].linkOverride->bandwidth = 20e9;
    ASSERT_TRUE(back == base);

    // Oversubscription of the spine: no override there, only the level changes.
    const Result<Topology> spine = withParameter(base, kSpineOversub, 4);
    ASSERT_TRUE(spine.ok());
    ASSERT_QFUZZY_EQ(spine->levels[2].link.oversubscription, 4.0);
    Topology spineBack = *spine;
    spineBack.levels[2].link.oversubscription = 2;
    ASSERT_TRUE(spineBack == base);

    // Latency in seconds.
    const Result<Topology> lat = withParameter(base, {1, LinkField::Latency}, 7e-6);
    ASSERT_TRUE(lat.ok());
    ASSERT_QFUZZY_EQ(lat->levels[1].link.latency, 7e-6);
    ASSERT_QFUZZY_EQ(lat->groups[overridden].linkOverride->latency, 7e-6);
    ASSERT_QFUZZY_EQ(lat->groups[overridden].linkOverride->bandwidth, 20e9);
}

TEST(ClusterSweep, outOfRangeValuesAreRefused)
{
    const Topology base = spineLeaf16();
    const auto refused = [&](const SweepParameter &p, double value, const std::string &words) {
        const Result<Topology> r = withParameter(base, p, value);
        const std::string &msg = r.error();
        return !r.ok() && coretest::contains(msg, words) ? std::string() : std::string("accepted or wrong message: ") + msg;
    };
    ASSERT_EQ(refused(kSpineOversub, 0.5, "spine oversubscription: must be at least 1"), std::string());
    ASSERT_EQ(refused(kSpineOversub, 2000, "must be at most 1024"), std::string());
    ASSERT_EQ(refused({1, LinkField::Bandwidth}, 0, "rack bandwidth (GB/s): must be at least 1e-06 GB/s"), std::string());
    ASSERT_EQ(refused({1, LinkField::Bandwidth}, std::nan(""), "finite"), std::string());
    ASSERT_EQ(refused({0, LinkField::Latency}, -1e-6, "node latency (us): must be at least 0"), std::string());
    ASSERT_EQ(refused({0, LinkField::Oversubscription}, 2, "no oversubscription"), std::string());
    ASSERT_EQ(refused({3, LinkField::Bandwidth}, 1e9, "level 3 does not exist"), std::string());
    // The edges of the ranges are accepted.
    ASSERT_TRUE(withParameter(base, kSpineOversub, 1).ok());
    ASSERT_TRUE(withParameter(base, kSpineOversub, 1024).ok());
    ASSERT_TRUE(withParameter(base, {0, LinkField::Latency}, 0).ok());
}

TEST(ClusterSweep, sweepValuesByHand)
{
    ASSERT_EQ(sweepValues(1, 4, 4), (std::vector<double>{1, 2, 3, 4}));
    ASSERT_EQ(sweepValues(10, 20, 3), (std::vector<double>{10, 15, 20}));
    ASSERT_EQ(sweepValues(12.5e9, 100e9, 5), (std::vector<double>{12.5e9, 34.375e9, 56.25e9, 78.125e9, 100e9}));
    const std::vector<double> geo = sweepValues(1, 8, 4, true);
    ASSERT_EQ(geo.size(), size_t(4));
    ASSERT_QFUZZY_EQ(geo[0], 1.0);
    ASSERT_TRUE(std::fabs(geo[1] - 2) < 1e-12);
    ASSERT_TRUE(std::fabs(geo[2] - 4) < 1e-12);
    ASSERT_QFUZZY_EQ(geo[3], 8.0);
    const std::vector<double> down = sweepValues(100, 12.5, 4, true);  // 100, 50, 25, 12.5
    ASSERT_TRUE(std::fabs(down[1] - 50) < 1e-9 && std::fabs(down[2] - 25) < 1e-9);
    ASSERT_QFUZZY_EQ(down.back(), 12.5);
    ASSERT_TRUE(sweepValues(0, 8, 4, true).empty());  // a ratio needs positive ends
    ASSERT_EQ(sweepValues(3, 9, 1), std::vector<double>{3});
    ASSERT_TRUE(sweepValues(3, 9, 0).empty());
}

TEST(ClusterSweep, oneRunPerPlannerPerPoint)
{
    const Topology base = spineLeaf16();
    const ModelProfile model = smallModel();
    const SearchOptions o = smallOptions();
    const std::vector<std::string> planners{"nest", "megatron", "flat"};
    const std::vector<double> values{1, 2, 4};
    std::mutex m;
    std::vector<double> fractions;
    bool indicesInRange = true;  // checked here: an assertion belongs to the test's thread
    const SweepProgressFn progress = [&](int point, int planner, double f) {
        const std::lock_guard<std::mutex> lock(m);
        indicesInRange = indicesInRange && point >= 0 && point < 3 && planner >= 0 && planner < 3;
        fractions.push_back(f);
    };
    const CancelToken never;
    const SweepResult r = runSweep(base, model, o, kSpineOversub, values, planners, 2, progress, never);
    ASSERT_TRUE(!r.cancelled);
    ASSERT_EQ(r.planners, planners);
    ASSERT_EQ(r.values, values);
    ASSERT_EQ(r.points.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        const SweepPoint &pt = r.points[i];
        ASSERT_QFUZZY_EQ(pt.value, values[i]);
        ASSERT_EQ(pt.runs.size(), planners.size());
        const Topology cluster = withParameter(base, kSpineOversub, values[i]).value();
        for (size_t k = 0; k < planners.size(); ++k) {
            const PlannerRun &run = pt.runs[k];
            ASSERT_EQ(run.planner, planners[k]);
            ASSERT_TRUE(run.result.found) << run.result.message.c_str();
            // Independent check: the evaluator on the swept cluster gives the same report.
            const Report again = evaluate(run.result.plan, cluster, model, o.cost);
            ASSERT_TRUE(again.feasible);
            ASSERT_QFUZZY_EQ(run.result.report.iterationTime, again.iterationTime);
            ASSERT_QFUZZY_EQ(run.result.report.samplesPerSecond, again.samplesPerSecond);
            ASSERT_QFUZZY_EQ(sweepSamplesPerSecond(run), again.samplesPerSecond);
        }
    }
    // Progress never goes back and ends at the whole sweep.
    ASSERT_TRUE(indicesInRange);
    ASSERT_TRUE(!fractions.empty());
    for (size_t i = 1; i < fractions.size(); ++i)
        ASSERT_TRUE(fractions[i] >= fractions[i - 1]);
    ASSERT_QFUZZY_EQ(fractions.back(), 1.0);
}

TEST(ClusterSweep, oversubscriptionNeverHelpsNest)
{
    // A flow across the spine gets bandwidth / oversubscription: every plan gets slower or
    // stays, so the optimum (NEST is exact over its space) cannot rise. At 8:1 the spine
    // (12.5 GB/s / 8) is slow enough that the 1:1 optimum must change or lose time.
    const Topology base = spineLeaf16();
    const ModelProfile model = smallModel();
    const std::vector<double> values{1, 2, 4, 8};
    const CancelToken never;
    const SweepResult r = runSweep(base, model, smallOptions(), kSpineOversub, values, {"nest"}, 1, {}, never);
    ASSERT_EQ(r.points.size(), values.size());
    std::vector<double> tput;
    for (const SweepPoint &pt : r.points)
        tput.push_back(sweepSamplesPerSecond(pt.runs.front()));
    for (size_t i = 1; i < tput.size(); ++i)
        ASSERT_TRUE(tput[i] <= tput[i - 1] * (1 + 1e-12)) << values[i - 1] << ":1 gives " << tput[i - 1] << " samples/s, " << values[i]
                                                          << ":1 gives " << tput[i];
    // Not a flat line: the spine matters on this cluster (else the test proves nothing)...
    ASSERT_TRUE(tput.back() < tput.front()) << tput.front() << " vs " << tput.back();
}

TEST(ClusterSweep, cancelKeepsFinishedPointsOnly)
{
    const Topology base = spineLeaf16();
    CancelToken token;
    const SweepProgressFn progress = [&](int point, int, double) {
        if (point >= 1)
            token.cancel();  // while the second point is being planned
    };
    const SweepResult r = runSweep(base, smallModel(), smallOptions(), kSpineOversub, {1, 2, 3, 4},
                                   {"nest", "megatron"}, 2, progress, token);
    ASSERT_TRUE(r.cancelled);
    ASSERT_EQ(r.points.size(), size_t(1));
    ASSERT_EQ(r.values.size(), size_t(4));
    ASSERT_QFUZZY_EQ(r.points[0].value, 1.0);
    for (const PlannerRun &run : r.points[0].runs) {
        ASSERT_TRUE(run.result.found);
        ASSERT_TRUE(!run.result.cancelled);
    }
    // Cancelled before it starts: nothing at all.
    const SweepResult none = runSweep(base, smallModel(), smallOptions(), kSpineOversub, {1, 2}, {"nest"}, 1, {}, token);
    ASSERT_TRUE(none.cancelled);
    ASSERT_TRUE(none.points.empty());
}

TEST(ClusterSweep, refusedValueSaysWhyInItsRuns)
{
    const CancelToken never;
    const SweepResult r = runSweep(spineLeaf16(), smallModel(), smallOptions(), kSpineOversub, {0.5, 1},
                                   {"nest", "megatron"}, 1, {}, never);
    ASSERT_EQ(r.points.size(), size_t(2));
    for (const PlannerRun &run : r.points[0].runs) {
        ASSERT_TRUE(!run.result.found);
        ASSERT_TRUE(coretest::contains(run.result.message, "must be at least 1"));
        ASSERT_TRUE(std::isnan(sweepSamplesPerSecond(run)));
    }
    ASSERT_TRUE(r.points[1].runs[0].result.found);
}

TEST(ClusterSweep, csvHasOneLinePerPointAndPlanner)
{
    const Topology base = spineLeaf16();
    const CancelToken never;
    const SweepParameter bw{2, LinkField::Bandwidth};
    const SweepResult r = runSweep(base, smallModel(), smallOptions(), bw, {6.25e9, 12.5e9}, {"nest", "megatron"}, 2,
                                   {}, never);
    const std::string csv = sweepCsv(r, base);
    std::istringstream in(csv);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    ASSERT_EQ(lines.size(), size_t(1 + 2 * 2));
    ASSERT_TRUE(lines[0].rfind("value,planner,feasible,samples_per_s,iteration_s,", 0) == 0);
    // value in GB/s, the parameter column naming the unit; samples/s = the report's.
    ASSERT_TRUE(lines[1].rfind("6.25,nest,true,", 0) == 0);
    ASSERT_TRUE(lines[4].rfind("12.5,megatron,true,", 0) == 0);
    ASSERT_TRUE(lines[1].find(",spine bandwidth (GB/s),") != std::string::npos);
    char expected[40];
    std::snprintf(expected, sizeof expected, ",%.12g,", r.points[0].runs[0].result.report.samplesPerSecond);
    ASSERT_TRUE(lines[1].find(expected) != std::string::npos) << lines[1].c_str();
}

