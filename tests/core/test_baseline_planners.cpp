// The baseline planners (flat, megatron, mcmc) and the registry: NEST is never worse than a
// baseline (each baseline's plans lie in NEST's space, which NEST searches exactly); every
// baseline's time is the evaluator's; a baseline that finds nothing says why; MCMC is
// deterministic for a seed; the flat planner equals NEST where the network is uniform and
// its mean link is the hand-computed pair average; the manual rules hold.
#include "Fixtures.h"
#include "ClusterTemplates.h"
#include "FlatPlanner.h"
#include "McmcPlanner.h"
#include "MegatronPlanner.h"
#include "ModelIO.h"
#include "NestPlanner.h"
#include "PaperEvaluation.h"
#include "PlanShape.h"
#include "PlannerRuns.h"
#include "PlannerRegistry.h"

#include "CoreTestSupport.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <thread>

using namespace nest;

namespace {

// `text` holds `part`, ignoring ASCII case.
bool containsNoCase(std::string text, std::string part)
{
    const auto lower = [](std::string &x) {
        std::transform(x.begin(), x.end(), x.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    };
    lower(text);
    lower(part);
    return coretest::contains(text, part);
}

const std::vector<std::string> kBaselines{"flat", "megatron", "mcmc"};

Topology twoLevel(double nodeGBps, double rackGBps, double oversub)
{
    DeviceSpec d = devicePreset("h100-sxm-80gb").value();
    return Topology::uniform("two-level", d,
                             {{"node", 4, {nodeGBps * 1e9, 1e-6, 1}},
                              {"rack", 2, {rackGBps * 1e9, 5e-6, oversub}}});
}

} // namespace

TEST(BaselinePlanners, registryKnowsEveryPlanner)
{
    for (const char *name : {"nest", "exhaustive", "flat", "megatron", "mcmc"}) {
        const std::unique_ptr<Planner> p = makePlanner(name);
        ASSERT_TRUE(p != nullptr) << name;
        ASSERT_EQ(p->name(), std::string(name));
    }
    ASSERT_EQ(plannerNames().front(), std::string("nest"));
    ASSERT_EQ(plannerNames().size(), plannerInfos().size());
    for (const PlannerInfo &i : plannerInfos())
        ASSERT_TRUE(!i.description.empty());
    ASSERT_TRUE(makePlanner("alpa") == nullptr);
}

TEST(BaselinePlanners, nestNeverWorseOnTheQuickGrid)
{
    const EvaluationGrid grid = paperEvaluationGrid(true);
    int compared = 0;
    for (const EvaluationPoint &p : grid.points) {
        if (p.part == EvaluationPart::Memory)
            continue;
        const Topology topo = evaluationCluster(p).value();
        const ModelProfile model = fixtures::model(p.model);
        const std::vector<PlannerRun> runs =
            runPlanners(topo, model, evaluationOptions(grid, p), grid.planners, 2);
        ASSERT_EQ(runs.front().planner, std::string("nest"));
        ASSERT_TRUE(runs.front().result.found);
        const double nest = runs.front().result.report.iterationTime;
        for (size_t i = 1; i < runs.size(); ++i) {
            if (!runs[i].result.found)
                continue;
            ++compared;
            const double other = runs[i].result.report.iterationTime;
            ASSERT_TRUE(nest <= other * (1 + 1e-9)) << p.model << " on " << p.family << "/" << p.devices << "/" << p.model << ": nest " << nest
                                                << " s, " << runs[i].planner << " " << other << " s";
        }
    }
    ASSERT_TRUE(compared >= 30);  // 13 points x 3 baselines, less any that found nothing
}

TEST(BaselinePlanners, baselinesAreConsistentWithTheEvaluator)
{
    const Topology topo = fixtures::cluster("paper-spineleaf-64");
    const ModelProfile model = fixtures::model("llama2-7b");
    SearchOptions o;
    o.evaluationBudget = 300;
    for (const std::string &name : kBaselines) {
        const PlanResult r = makePlanner(name)->plan(topo, model, o);
        ASSERT_TRUE(r.found) << name.c_str();
        ASSERT_TRUE(r.verified) << (name + ": " + r.message).c_str();
        // The reported time is the evaluator's for the plan on the real cluster.
        const Report again = evaluate(r.plan, topo, model, o.cost);
        ASSERT_TRUE(again.feasible);
        ASSERT_QFUZZY_EQ(r.report.iterationTime, again.iterationTime);
        ASSERT_TRUE(std::isfinite(r.report.iterationTime) && r.report.iterationTime > 0);
    }
}

TEST(BaselinePlanners, nothingFeasibleSaysWhy)
{
    // GPT-3 175B needs ~2.8 TB of model states; 8 V100 hold 256 GB.
    const Topology topo = fixtures::cluster("paper-v100-8");
    const ModelProfile model = fixtures::model("gpt3-175b");
    SearchOptions o;
    o.evaluationBudget = 200;
    for (const std::string &name : kBaselines) {
        const PlanResult r = makePlanner(name)->plan(topo, model, o);
        ASSERT_TRUE(!r.found) << name.c_str();
        ASSERT_TRUE(!r.cancelled);
        const std::string &msg = r.message;
        ASSERT_TRUE(coretest::contains(msg, "GB") && containsNoCase(msg, "memory")) << name + ": " + r.message;
    }
}

TEST(BaselinePlanners, mcmcIsDeterministicForASeed)
{
    const Topology topo = fixtures::cluster("paper-fattree-64");
    const ModelProfile model = fixtures::model("llama2-7b");
    SearchOptions o;
    o.evaluationBudget = 400;
    o.seed = 7;
    const PlanResult a = McmcPlanner().plan(topo, model, o);
    const PlanResult b = McmcPlanner().plan(topo, model, o);
    ASSERT_TRUE(a.found);
    ASSERT_TRUE(a.plan == b.plan);
    ASSERT_QFUZZY_EQ(a.objective, b.objective);
    ASSERT_EQ(a.stats.pruned, b.stats.pruned);
    // Another seed walks another chain: over a few seeds the visited infeasible counts differ.
    std::set<long long> pruned;
    for (unsigned long long seed : {1ULL, 2ULL, 3ULL, 4ULL}) {
        o.seed = seed;
        pruned.insert(McmcPlanner().plan(topo, model, o).stats.pruned);
    }
    ASSERT_TRUE(pruned.size() > 1);
}

TEST(BaselinePlanners, mcmcSpendsItsBudget)
{
    const Topology topo = fixtures::cluster("paper-v100-16");
    const ModelProfile model = fixtures::model("bert-large");
    SearchOptions o;
    for (int budget : {50, 250}) {
        o.evaluationBudget = budget;
        const PlanResult r = McmcPlanner().plan(topo, model, o);
        ASSERT_TRUE(r.found);
        ASSERT_EQ(r.stats.states, static_cast<long long>(budget));  // one state per evaluation
    }
    o.evaluationBudget = 0;
    ASSERT_EQ(McmcPlanner().plan(topo, model, o).stats.states, static_cast<long long>(McmcPlanner::defaultBudget));
}

TEST(BaselinePlanners, mcmcCancels)
{
    const Topology topo = fixtures::cluster("paper-spineleaf-1024");
    const ModelProfile model = fixtures::model("gpt3-175b");
    SearchOptions o;
    o.evaluationBudget = 1000000;
    CancelToken token;
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        token.cancel();
    });
    const PlanResult r = McmcPlanner().plan(topo, model, o, ProgressFn(), token);
    canceller.join();
    ASSERT_TRUE(r.cancelled);
    ASSERT_TRUE(!r.found);
}

TEST(BaselinePlanners, flatLinkIsThePairAverage)
{
    // 2 nodes x 4 devices: 2 * 4 * 3 = 24 ordered pairs inside a node (the NVLink domain, at
    // NCCL's 20.6 of 25 GB/s per H100 link), 8 * 8 - 2 * 16 = 32 across the rack (at rack
    // bandwidth / oversubscription, at NCCL's 96 % of a NIC).
    const Topology topo = twoLevel(400, 50, 2);
    const LinkParams flat = flatLinkOf(topo);
    ASSERT_QFUZZY_EQ(flat.bandwidth, (24 * 400e9 * (20.6 / 25) + 32 * 25e9 * 0.96) / 56);
    ASSERT_QFUZZY_EQ(flat.latency, (24 * 1e-6 + 32 * 5e-6) / 56);
    ASSERT_QFUZZY_EQ(flat.oversubscription, 1.0);
    const Topology view = flatView(topo);
    ASSERT_EQ(view.deviceCount(), topo.deviceCount());
    for (int a = 0; a < view.deviceCount(); ++a)
        for (int b = 0; b < view.deviceCount(); ++b)
            if (a != b) {
                // What the view prices between any two devices is the average.
                ASSERT_QFUZZY_EQ(view.achievableLink(view.lcaGroup(a, b)).bandwidth, flat.bandwidth);
            }
}

TEST(BaselinePlanners, flatEqualsNestOnAUniformCluster)
{
    const Topology topo = twoLevel(100, 100, 1);  // every link the same
    for (const char *m : {"llama2-7b", "bert-large"}) {
        const ModelProfile model = fixtures::model(m);
        const SearchOptions o;
        const PlanResult nest = NestPlanner().plan(topo, model, o);
        const PlanResult flat = FlatPlanner().plan(topo, model, o);
        ASSERT_TRUE(nest.found && flat.found);
        ASSERT_QFUZZY_EQ(flat.report.iterationTime, nest.report.iterationTime);
        // Re-evaluated on the uniform cluster, the flat plan costs what NEST's does.
        ASSERT_QFUZZY_EQ(evaluate(flat.plan, topo, model).iterationTime, nest.report.iterationTime);
    }
}

TEST(BaselinePlanners, flatIsScoredOnTheRealCluster)
{
    // A slow, oversubscribed rack level: the flat view is faster than the real network, so
    // the flat plan's real time is at least NEST's and is not its flat-view value.
    const Topology topo = twoLevel(400, 5, 4);
    const ModelProfile model = fixtures::model("llama2-7b");
    const SearchOptions o;
    const PlanResult flat = FlatPlanner().plan(topo, model, o);
    const PlanResult nest = NestPlanner().plan(topo, model, o);
    ASSERT_TRUE(flat.found && nest.found && flat.verified);
    ASSERT_QFUZZY_EQ(flat.report.iterationTime, evaluate(flat.plan, topo, model).iterationTime);
    ASSERT_TRUE(flat.report.iterationTime >= nest.report.iterationTime * (1 - 1e-12));
    const double onFlatView = evaluate(flat.plan, flatView(topo), model).iterationTime;
    ASSERT_TRUE(flat.report.iterationTime != onFlatView);
}

TEST(BaselinePlanners, megatronFollowsTheManualRules)
{
    // 8 GPUs per node: tp 8 divides the 32 heads of Llama-2 7B and the 16 of BERT-Large.
    const Topology topo = fixtures::cluster("paper-spineleaf-64");
    for (const char *m : {"llama2-7b", "bert-large", "llama3-70b"}) {
        const ModelProfile model = fixtures::model(m);
        SearchOptions o;
        const PlanResult r = MegatronPlanner().plan(topo, model, o);
        ASSERT_TRUE(r.found) << m;
        const PlanShape s = shapeOf(r.plan);
        ASSERT_EQ(s.least.tp, 8);
        ASSERT_EQ(s.most.tp, 8);
        ASSERT_TRUE(s.sequenceParallel);
        ASSERT_TRUE(s.most.zero <= 1);
        int blocks = 0;
        for (const LayerProfile &l : model.layers)
            blocks += l.kind == LayerKind::Transformer || l.kind == LayerKind::Moe;
        ASSERT_EQ(blocks % s.pp, 0);  // uniform stages
        ASSERT_TRUE(8 * s.pp * s.dp <= topo.deviceCount());
        // The fewest stages that fit: one stage fewer does not fit for this micro-batch and
        // these switches (checked against the evaluator), unless pp is already 1.
        if (s.pp > 1) {
            SearchOptions fewer = o;
            fewer.maxStages = s.pp - 1;
            const PlanResult f = MegatronPlanner().plan(topo, model, fewer);
            ASSERT_TRUE(!f.found || f.report.iterationTime >= r.report.iterationTime);
        }
    }
    // A node of 2 V100: tp 2.
    const Topology v100 = fixtures::cluster("paper-v100-16");
    const PlanResult r = MegatronPlanner().plan(v100, fixtures::model("bert-large"), SearchOptions{});
    ASSERT_TRUE(r.found);
    ASSERT_EQ(shapeOf(r.plan).most.tp, 2);
}

TEST(BaselinePlanners, parallelRunsEqualSequentialOnes)
{
    const Topology topo = fixtures::cluster("paper-v100-16");
    const ModelProfile model = fixtures::model("llama2-7b");
    SearchOptions o;
    o.evaluationBudget = 200;
    const std::vector<std::string> names{"nest", "flat", "megatron", "mcmc", "bogus"};
    const std::vector<PlannerRun> one = runPlanners(topo, model, o, names, 1);
    const std::vector<PlannerRun> many = runPlanners(topo, model, o, names, 4);
    ASSERT_EQ(one.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) {
        ASSERT_EQ(one[i].planner, names[i]);
        ASSERT_EQ(many[i].planner, names[i]);
        ASSERT_EQ(one[i].result.found, many[i].result.found);
        ASSERT_TRUE(one[i].result.plan == many[i].result.plan);
    }
    ASSERT_TRUE(!one.back().result.found);
    ASSERT_TRUE(coretest::contains(one.back().result.message, "bogus"));
}

