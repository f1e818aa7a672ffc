#include "PlannerRegistry.h"

#include "ExhaustivePlanner.h"
#include "FlatPlanner.h"
#include "McmcPlanner.h"
#include "MegatronPlanner.h"
#include "NestPlanner.h"

#include <functional>

namespace nest {

namespace {

struct Entry {
    PlannerInfo info;
    std::function<std::unique_ptr<Planner>()> make;
};

const std::vector<Entry> &entries()
{
    static const std::vector<Entry> list{
        {{"nest", "NEST: network- and memory-aware dynamic program", false},
         [] { return std::make_unique<NestPlanner>(); }},
        {{"exhaustive", "brute force over the NEST plan space (small instances only)", false},
         [] { return std::make_unique<ExhaustivePlanner>(); }},
        {{"flat", "NEST's dynamic program on a flat network (every link the cluster's mean)", true},
         [] { return std::make_unique<FlatPlanner>(); }},
        {{"megatron", "manual Megatron-LM practice: tp per node, fewest stages that fit, dp the rest",
          true},
         [] { return std::make_unique<MegatronPlanner>(); }},
        {{"mcmc", "simulated annealing over the plan space (seeded, --budget evaluations)", true},
         [] { return std::make_unique<McmcPlanner>(); }},
    };
    return list;
}

} // namespace

const std::vector<PlannerInfo> &plannerInfos()
{
    static const std::vector<PlannerInfo> infos = [] {
        std::vector<PlannerInfo> v;
        for (const Entry &e : entries())
            v.push_back(e.info);
        return v;
    }();
    return infos;
}

const std::vector<std::string> &plannerNames()
{
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const Entry &e : entries())
            v.push_back(e.info.name);
        return v;
    }();
    return names;
}

std::unique_ptr<Planner> makePlanner(const std::string &name)
{
    for (const Entry &e : entries())
        if (e.info.name == name)
            return e.make();
    return nullptr;
}

std::string plannerNameList()
{
    std::string s;
    for (const std::string &n : plannerNames())
        s += (s.empty() ? "" : ", ") + n;
    return s;
}

} // namespace nest
