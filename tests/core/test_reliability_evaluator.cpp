// Issue 13, results: no non-finite success (a time or memory that is not a number is an
// infeasible plan with the stage and the term), the divisibility rules of each parallelism,
// no negative capacities in messages, planners robust when every cost is infinite, and the
// limits before work (the state-count and memory refusals, the simulator's size cap).
#include "ClusterTemplates.h"
#include "Evaluator.h"
#include "ExhaustivePlanner.h"
#include "ModelBuilder.h"
#include "ModelConfig.h"
#include "NestPlanner.h"
#include "PlanBuilder.h"
#include "PlanSpace.h"
#include "SearchEstimate.h"
#include "Simulator.h"

#include "CoreTestSupport.h"

#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

using namespace nest;

namespace {

ModelConfig smallGpt(int heads = 16, int layers = 4)
{
    ModelConfig c = familyDefaults("gpt");
    c.name = "small";
    c.layers = layers;
    c.hidden = 96 * heads;
    c.heads = heads;
    c.kvHeads = heads;
    c.ffnHidden = 4 * c.hidden;
    c.vocab = 1000;
    c.maxPositions = 512;
    c.seqLength = 512;
    c.globalBatch = 64;
    return c;
}

ModelProfile profileOf(const ModelConfig &c)
{
    Result<ModelProfile> p = buildValidatedProfile(c);
    if (!p)
        throw std::runtime_error(p.error());  // fails the test that asked, with the reason
    return *p;
}

Topology node(int devices, DeviceSpec device = *devicePreset("a100-80gb"), double oversubscription = 1)
{
    return Topology::uniform("node", std::move(device),
                             {{"node", devices, linkFromUnits(300, 1, 1)},
                              {"rack", 2, linkFromUnits(25, 5, oversubscription)}});
}

Plan uniform(const Topology &t, const ModelProfile &m, int tp, int pp, int dp)
{
    UniformLayout l;
    l.tp = tp;
    l.pp = pp;
    l.dp = dp;
    l.globalBatch = 64;
    l.seqLength = m.seqLength;
    Result<Plan> p = buildUniformPlan(l, t, m);
    if (!p)
        throw std::runtime_error(p.error());  // fails the test that asked, with the reason
    return *p;
}

// A minus sign right before a digit and not right after one ("(?<![0-9])-[0-9]"): "-3" or
// "is -0.5 GB", not "layers 0-3".
bool mentionsNegativeNumber(const std::string &s)
{
    const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    for (size_t i = 0; i + 1 < s.size(); ++i)
        if (s[i] == '-' && digit(s[i + 1]) && (i == 0 || !digit(s[i - 1])))
            return true;
    return false;
}

} // namespace

TEST(ReliabilityEvaluator, tpMustDivideTheHeads)
{
    const Topology t = node(8);
    const Plan plan = uniform(t, profileOf(smallGpt(16)), 8, 1, 2);
    ASSERT_TRUE(evaluate(plan, t, profileOf(smallGpt(16))).feasible);
    // The same plan on a 12-head model (hidden 1152): tp 8 does not divide 12 heads.
    const Report r = evaluate(plan, t, profileOf(smallGpt(12)));
    ASSERT_TRUE(!r.feasible);
    ASSERT_QFUZZY_EQ(r.iterationTime, 0.0);
    ASSERT_TRUE(!r.reasons.empty());
    ASSERT_EQ(r.reasons.front(), std::string("stage 0: tp 8 does not divide the model's 12 attention heads"));
}

TEST(ReliabilityEvaluator, cpMustDivideTheSequence)
{
    const Topology t = node(8);
    const ModelProfile m = profileOf(smallGpt(16));
    Plan plan = uniform(t, m, 2, 1, 8);
    plan.stages[0].cp = 3;  // 512 % 3 != 0 (the rows are now too short as well)
    const std::vector<std::string> errors = planErrors(plan, t, m);
    bool found = false;
    for (const auto &e : errors)
        found = found || e == "stage 0: cp 3 does not divide the sequence length 512";
    ASSERT_TRUE(found);
}

TEST(ReliabilityEvaluator, interleavedOnOneStageIsRefused)
{
    // evaluate --tp 8 --schedule interleaved:2 on one 8-device node: two chunks on the
    // same devices would send to themselves (once "feasible, iteration time inf").
    const Topology t = Topology::uniform("one", *devicePreset("a100-80gb"), {{"node", 8, linkFromUnits(300, 1, 1)}});
    const ModelProfile m = profileOf(smallGpt(16));
    Plan plan = uniform(t, m, 8, 1, 1);
    plan.schedule = Schedule::Interleaved;
    plan.virtualStages = 2;
    StagePlan second = plan.stages[0];
    plan.stages[0].endLayer = 3;
    second.firstLayer = 3;
    plan.stages.push_back(second);
    const Report r = evaluate(plan, t, m);
    ASSERT_TRUE(!r.feasible);
    ASSERT_TRUE(std::isfinite(r.iterationTime));
    ASSERT_TRUE(r.reasons.front().find("the interleaved schedule needs a pipeline of at least 2 stages") == 0)
        << r.reasons.front();
    ASSERT_TRUE(!simulate(plan, t, m).error.empty());
}

TEST(ReliabilityEvaluator, nonFiniteCostIsInfeasibleWithTheTerm)
{
    // A device the loaders refuse (peak 1e-320 TFLOP/s), built directly: the cost model
    // divides into infinities, and the report says which stage and which term.
    DeviceSpec weak = *devicePreset("a100-80gb");
    weak.peakFlops = 1e-320;
    weak.memoryBandwidth = 1e-320;
    const Topology t = node(8, weak);
    const ModelProfile m = profileOf(smallGpt(16));
    const Report r = evaluate(uniform(t, m, 2, 2, 4), t, m);
    ASSERT_TRUE(!r.feasible);
    ASSERT_TRUE(std::isfinite(r.iterationTime));
    ASSERT_TRUE(!r.reasons.empty());
    ASSERT_TRUE(r.reasons.front().find("stage 0 (layers 0-") == 0) << r.reasons.front();
    ASSERT_TRUE(r.reasons.front().find("is infinite") != std::string::npos ||
                 r.reasons.front().find("is not a number") != std::string::npos) << r.reasons.front();
}

TEST(ReliabilityEvaluator, plannersSurviveEveryCostInfinite)
{
    // The UBSan report "member access within null OptCost pointer" in the seeding.
    struct Row {
        const char *name;
        int which;
    };
    const std::vector<Row> rows{{"peak 1e-320", 0}, {"oversubscription 1e308", 1}, {"efficiency 1e-320", 2}};
    for (const Row &row : rows) {
        SCOPED_TRACE(row.name);
        [&] {
            const int which = row.which;
            DeviceSpec device = *devicePreset("a100-80gb");
            if (which == 0)
                device.peakFlops = 1e-320;
            const Topology t = node(4, device, which == 1 ? 1e308 : 1);
            const ModelProfile m = profileOf(smallGpt(16));
            SearchOptions o;
            o.globalBatch = 16;
            if (which == 2)
                o.cost.matmulEfficiency = 1e-320;
            const PlanResult r = NestPlanner().plan(t, m, o);
            if (r.found) {  // only with finite, verified numbers
                ASSERT_TRUE(r.report.feasible);
                ASSERT_TRUE(std::isfinite(r.objective));
                ASSERT_TRUE(r.verified);
            } else {
                ASSERT_TRUE(!r.message.empty());
            }
            ASSERT_TRUE(which == 1 || !r.found);  // peak / efficiency that small: nothing is finite
        }();
    }
}

TEST(ReliabilityEvaluator, noNegativeCapacityInMessages)
{
    // 0.5 GB devices: the 1 GB runtime overhead alone exceeds them.
    DeviceSpec tiny = *devicePreset("a100-80gb");
    tiny.name = "tiny";
    tiny.memoryBytes = 0.5e9;
    const Topology t = node(4, tiny);
    const ModelProfile m = profileOf(smallGpt(16));
    SearchOptions o;
    o.globalBatch = 16;
    const PlanResult r = NestPlanner().plan(t, m, o);
    ASSERT_TRUE(!r.found);
    ASSERT_TRUE(!mentionsNegativeNumber(r.message)) << r.message;
    ASSERT_TRUE(r.message.find("the fixed per-device memory alone") != std::string::npos) << r.message;
    const Report rep = evaluate(uniform(t, m, 1, 1, 8), t, m);
    ASSERT_TRUE(!rep.feasible);
    for (const auto &reason : rep.reasons)
        ASSERT_TRUE(!mentionsNegativeNumber(reason)) << reason;
}

TEST(ReliabilityEvaluator, exhaustiveRefusesAnAstronomicalSpace)
{
    // 40 layers, max-stages far above them (clamped to the layer count), every option:
    // sum over S of C(39, S-1) x options^S plans. Refused at once with the estimate.
    const Topology t = node(8);
    const ModelProfile m = profileOf(smallGpt(16, 40));
    SearchOptions o;
    o.maxStages = 1000000000;
    const PlanSpace space(t, m, o);
    ASSERT_EQ(space.maxStages(), m.layerCount());
    const PlanResult r = ExhaustivePlanner().plan(t, m, o);
    ASSERT_TRUE(!r.found);
    ASSERT_TRUE(r.message.find("search would visit ~") == 0) << r.message;
    ASSERT_TRUE(r.message.find("above the limit of 2.0e+09 states") != std::string::npos) << r.message;
    ASSERT_EQ(r.stats.states, 0LL);  // nothing was enumerated
}

TEST(ReliabilityEvaluator, nestRefusesAboveTheMemoryBudget)
{
    const Topology t = node(8);
    const ModelProfile m = profileOf(smallGpt(16, 24));
    SearchOptions o;
    o.memoryBudgetBytes = 1e4;  // 10 kB
    const Result<SearchEstimate> e = estimateSearch(t, m, o, "nest");
    ASSERT_TRUE(e.ok());
    ASSERT_TRUE(e->bytes > 1e4 && std::isfinite(e->bytes));
    ASSERT_TRUE(e->states > 0 && e->seconds > 0);
    const PlanResult r = NestPlanner().plan(t, m, o);
    ASSERT_TRUE(!r.found);
    ASSERT_TRUE(r.message.find("search would need ~") == 0) << r.message;
    ASSERT_TRUE(r.message.find("above the budget of 0.0 GB") != std::string::npos) << r.message;
    // The default budget is half the machine's memory and lets the same search run.
    ASSERT_TRUE(defaultMemoryBudgetBytes() > 1e8);
    ASSERT_TRUE(NestPlanner().plan(t, m, SearchOptions{}).found);
}

TEST(ReliabilityEvaluator, simulatorRefusesAbsurdTimelines)
{
    const Topology t = node(8);
    ModelConfig c = smallGpt(16);
    c.globalBatch = 16777216;
    const ModelProfile m = profileOf(c);
    UniformLayout l;
    l.pp = 2;
    l.globalBatch = 16777216;
    l.seqLength = m.seqLength;
    const Result<Plan> plan = buildUniformPlan(l, t, m);
    ASSERT_TRUE(plan.ok()) << plan.error();
    const SimulationResult s = simulate(*plan, t, m);
    ASSERT_TRUE(s.error.find("the timeline would hold 6.71e+07 operations") == 0) << s.error;
    ASSERT_TRUE(s.events.empty());
}
