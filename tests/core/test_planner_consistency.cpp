// Consistency: for every model preset on a few cluster presets, the value the NEST planner
// optimised equals the evaluator's iteration time of the plan it returns (relative 1e-9,
// and in fact bit for bit),
// the plan is feasible and uses only the cluster's devices. Clusters are the paper's small
// ones (8 and 16 V100, 64-GPU spine-leaf) so the test stays fast in every build type.
#include "ClusterTemplates.h"
#include "ModelIO.h"
#include "NestPlanner.h"

#include "CoreTestSupport.h"

#include <cmath>
#include <string>
#include <vector>

using namespace nest;

namespace {

struct Row {
    std::string name;
    std::string cluster, model;
    int only;  // -1: every schedule; else that schedule alone
};

std::vector<Row> rows()
{
    std::vector<Row> out;
    for (const char *c : {"paper-v100-8", "paper-v100-16", "paper-spineleaf-64", "paper-fattree-64"})
        for (const char *m : {"gpt3-175b", "gpt3-35b", "llama2-7b", "llama3-70b", "bert-large", "mixtral-8x7b"})
            for (int only : {-1, int(Schedule::GPipe), int(Schedule::Interleaved)})
                out.push_back({std::string(c) + " " + m + " " + (only < 0 ? "all" : toString(Schedule(only))), c, m, only});
    // The paper's 1024-GPU spine-leaf cluster (the planner's speed target).
    for (const char *m : {"gpt3-175b", "llama3-70b", "mixtral-8x7b"})
        out.push_back({std::string("paper-spineleaf-1024 ") + m, "paper-spineleaf-1024", m, -1});
    return out;
}

void checkPreset(const std::string &cluster, const std::string &model, int only)
{
    const auto topo = clusterPreset(cluster);
    ASSERT_TRUE(topo.ok()) << topo.error().c_str();
    const auto prof = resolveModel(model);
    ASSERT_TRUE(prof.ok()) << prof.error().c_str();

    SearchOptions o;
    o.microBatches = {1, 2};  // every schedule, layout, width, ZeRO stage and recompute
    if (only >= 0)
        o.schedules = {static_cast<Schedule>(only)};
    if (only == int(Schedule::GPipe))
        o.globalBatch = 32;  // GPipe holds every micro-batch's activations: keep m small
    const PlanResult r = NestPlanner().plan(*topo, *prof, o);
    if (!r.found) {
        // Only allowed when memory is the obstacle, and then the message says so (the
        // interleaved candidates do not report their memory obstacle: known limitation).
        if (only != int(Schedule::Interleaved)) {
            ASSERT_TRUE(r.message.find("memory") != std::string::npos) << r.message.c_str();
        }
        ASSERT_TRUE(!r.message.empty());
        ASSERT_TRUE(topo->deviceCount() <= 16);
        return;
    }
    ASSERT_TRUE(r.report.feasible) << r.message.c_str();
    ASSERT_TRUE(r.verified) << r.message.c_str();
    ASSERT_TRUE(r.objective > 0);
    ASSERT_TRUE(std::abs(r.report.iterationTime - r.objective) <= 1e-9 * r.objective);
    // Stronger than the contract: NEST costs stages with the evaluator's own parts
    // (Evaluator.h), cached only under keys that determine them, so the value is the same
    // double, bit for bit.
    ASSERT_QFUZZY_EQ(r.objective, r.report.iterationTime);
    // Independent re-evaluation of the returned plan.
    const Report again = evaluate(r.plan, *topo, *prof);
    ASSERT_QFUZZY_EQ(again.iterationTime, r.report.iterationTime);
    ASSERT_TRUE(r.plan.deviceCount() <= topo->deviceCount());
    // The search ran: DP cells, or (when the seeded incumbent already meets every outer
    // point's compute lower bound) every point skipped by its bound.
    ASSERT_TRUE(r.stats.states > 0 || (r.stats.configs == 0 && r.stats.configsSkipped > 0));
}

} // namespace

TEST(PlannerConsistency, presets)
{
    for (const Row &row : rows()) {
        SCOPED_TRACE(row.name);
        checkPreset(row.cluster, row.model, row.only);  // a failed assertion ends this row only
    }
}
