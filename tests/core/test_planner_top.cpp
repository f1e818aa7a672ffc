// The K best distinct plans (issue 24, point 4; SearchOptions::topK, nest-cli plan --top K):
// on seeded tiny instances, NEST's list equals an independent brute-force enumeration of the
// same plan space -- every placement of every cut, width sequence and per-stage option,
// each valued by evaluate(), grouped by the distinctness key written out below (not
// PlanSignature.h's), the best of each group, the K best groups. Checked: the values in
// order (relative 1e-9), pairwise distinct keys, every listed plan verified against
// evaluate(), the first entry equal to the topK = 1 plan's value, and the key of every entry
// whose value is not tied with another's.
#include "Evaluator.h"
#include "ModelBuilder.h"
#include "NestPlanner.h"
#include "PlanSpace.h"

#include "CoreTestSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace nest;

namespace {

// Distinct = different schedule, depth v, micro-batch, dp, stage count, any stage's
// (tp, cp, ep, sp, zero, recompute), or the level of any boundary between consecutive stages.
std::vector<int> keyOf(const Plan &p, const Topology &topo)
{
    std::vector<int> k{int(p.schedule), p.virtualStages, p.microBatch, p.dp, int(p.stages.size())};
    for (size_t s = 0; s < p.stages.size(); ++s) {
        const StagePlan &st = p.stages[s];
        k.insert(k.end(), {st.tp, st.cp, st.ep, int(st.sp), st.zero, int(st.recompute)});
        if (s + 1 < p.stages.size()) {
            // The level of the lowest common ancestor over every pair across the boundary.
            int level = -1;
            for (const auto &ra : st.devices)
                for (int a : ra)
                    for (const auto &rb : p.stages[s + 1].devices)
                        for (int b : rb)
                            level = std::max(level, topo.level(a, b));
            k.push_back(level);
        } else {
            k.push_back(-1);
        }
    }
    return k;
}

// Every plan of the space (1F1B and interleaved points), valued by evaluate(); the best of
// each key.
std::map<std::vector<int>, double> bruteForce(const Topology &topo, const ModelProfile &model, const SearchOptions &o)
{
    const PlanSpace space(topo, model, o);
    const CostOptions co = space.costOptions();
    std::map<std::vector<int>, double> best;
    auto consider = [&](const Plan &plan) {
        const Report r = evaluate(plan, topo, model, co);
        if (!r.feasible)
            return;
        const std::vector<int> k = keyOf(plan, topo);
        auto it = best.find(k);
        if (it == best.end() || r.iterationTime < it->second)
            best[k] = r.iterationTime;
    };
    const int L = model.layerCount();
    for (const OuterConfig &cfg : space.configs()) {
        if (cfg.schedule == Schedule::Interleaved) {
            for (const InterleavedChoice &c : space.interleavedChoices(cfg))
                consider(space.makeInterleavedPlan(cfg, c));
            continue;
        }
        if (cfg.schedule != Schedule::OneFOneB)
            continue;
        std::vector<StageChoice> stages;
        std::function<void(int, int)> extend = [&](int first, int used) {
            if (first == L) {
                consider(space.makePlan(cfg, stages));
                return;
            }
            if (static_cast<int>(stages.size()) == space.maxStages())
                return;
            for (int end = first + 1; end <= L; ++end)
                for (int w : space.widths()) {
                    if (used + w > cfg.positions)
                        break;
                    for (const StageConfig &opt : space.stageOptions(cfg, w, first, end)) {
                        stages.push_back({first, end, opt});
                        extend(end, used + w);
                        stages.pop_back();
                    }
                }
        };
        extend(0, 0);
    }
    return best;
}

Topology tinyTree(std::mt19937 &rng, double memory)
{
    const DeviceSpec d = coretest::testDevice(memory);
    LinkParams fast, slow;
    fast.bandwidth = 200e9;
    fast.latency = 1e-6;
    slow.bandwidth = std::uniform_real_distribution<double>(10e9, 50e9)(rng);
    slow.latency = 5e-6;
    slow.oversubscription = std::uniform_int_distribution<int>(1, 2)(rng);
    const int perNode = std::uniform_int_distribution<int>(1, 2)(rng);
    const int nodes = std::uniform_int_distribution<int>(2, 3)(rng);
    return Topology::uniform("top-test", d, {{"node", perNode, fast}, {"rack", nodes, slow}});
}

struct Tally {
    int rows = 0, full = 0, shapes = 0;
};

void checkSeed(int seed, int keep, Tally &tally)
{
    std::mt19937 rng(static_cast<unsigned>(seed) * 2654435761u + 11u);
    ModelConfig c = familyDefaults("gpt");
    c.name = "top-tiny";
    c.layers = std::uniform_int_distribution<int>(1, 2)(rng);
    c.hidden = 256 * std::uniform_int_distribution<int>(1, 2)(rng);
    c.heads = 8;
    c.kvHeads = 8;
    c.ffnHidden = 4 * c.hidden;
    c.vocab = 1000;
    c.seqLength = 256;
    if (c.maxPositions > 0)
        c.maxPositions = c.seqLength;
    c.globalBatch = 8;
    const ModelProfile model = buildProfile(c);
    const double state = model.weightBytes() / model.bytesPerParam * 16.0;
    const double memory = 1e9 + state * (seed % 2 ? 0.7 : 2.0);
    const Topology topo = tinyTree(rng, memory);

    SearchOptions o;
    o.globalBatch = 8;
    o.microBatches = {1, 2};
    o.schedules = {Schedule::OneFOneB};
    if (seed % 3 == 0)
        o.schedules.push_back(Schedule::Interleaved);
    o.virtualStages = {2};
    o.tpCandidates = {1, 2};
    o.epCandidates = {1};
    o.cpCandidates = {1};
    o.allowZero = seed % 4 != 1;
    o.recomputeModes = {Recompute::None, Recompute::Full};
    o.topK = keep;

    const PlanResult nest = NestPlanner().plan(topo, model, o);
    SearchOptions one = o;
    one.topK = 1;
    const PlanResult single = NestPlanner().plan(topo, model, one);
    const std::map<std::vector<int>, double> groups = bruteForce(topo, model, o);
    std::vector<std::pair<double, std::vector<int>>> ranked;
    for (const auto &[k, v] : groups)
        ranked.push_back({v, k});
    std::sort(ranked.begin(), ranked.end());
    const size_t expected = std::min<size_t>(static_cast<size_t>(keep), ranked.size());

    ASSERT_EQ(nest.found, !ranked.empty());
    if (ranked.empty())
        return;
    ++tally.rows;
    tally.full += expected == static_cast<size_t>(keep) ? 1 : 0;
    ASSERT_EQ(nest.top.size(), expected);
    ASSERT_TRUE(single.found);
    EXPECT_EQ(nest.top.front().objective, single.objective);  // K = 1 is the same search
    EXPECT_EQ(nest.objective, nest.top.front().objective);
    std::vector<std::vector<int>> seen;
    for (size_t i = 0; i < expected; ++i) {
        const RankedPlan &t = nest.top[i];
        SCOPED_TRACE("rank " + std::to_string(i + 1));
        EXPECT_TRUE(t.verified);
        EXPECT_LE(std::abs(t.objective - ranked[i].first), 1e-9 * ranked[i].first)
            << "nest " << t.objective << " brute force " << ranked[i].first;
        if (i > 0)
            EXPECT_LE(nest.top[i - 1].objective, t.objective);
        const std::vector<int> k = keyOf(t.plan, topo);
        EXPECT_TRUE(std::find(seen.begin(), seen.end(), k) == seen.end()) << "two plans with one key";
        seen.push_back(k);
        // The key itself where the value is not tied with a neighbour's.
        const bool tied = (i > 0 && std::abs(ranked[i - 1].first - ranked[i].first) <= 1e-12 * ranked[i].first) ||
                          (i + 1 < ranked.size() &&
                           std::abs(ranked[i + 1].first - ranked[i].first) <= 1e-12 * ranked[i].first);
        if (!tied)
            EXPECT_EQ(k, ranked[i].second);
        const auto g = groups.find(k);
        ASSERT_TRUE(g != groups.end());
        EXPECT_LE(std::abs(g->second - t.objective), 1e-9 * t.objective) << "not the best of its key";
    }
    if (expected >= 2 && nest.top[0].plan.stages.size() != nest.top[1].plan.stages.size())
        ++tally.shapes;
}

} // namespace

TEST(PlannerTop, topKEqualsBruteForce)
{
    Tally tally;
    for (int seed = 1; seed <= 24; ++seed) {
        for (int keep : {2, 5, 12}) {
            SCOPED_TRACE("seed " + std::to_string(seed) + " K " + std::to_string(keep));
            checkSeed(seed, keep, tally);
        }
    }
    std::cerr << "rows " << tally.rows << " with K plans " << tally.full << "\n";
    EXPECT_GE(tally.rows, 40);
    EXPECT_GE(tally.full, 30);
}
