#include "FlatPlanner.h"

#include "NestPlanner.h"
#include "PlanSpace.h"

#include <chrono>
#include <cmath>
#include <sstream>

namespace nest {

LinkParams flatLinkOf(const Topology &topo)
{
    // Pairs whose lowest common ancestor is group g: n_g^2 - sum over children n_c^2
    // (ordered pairs of distinct devices); a node's children are its devices (n_c = 1).
    double pairs = 0, bandwidth = 0, latency = 0;
    for (size_t g = 0; g < topo.groups.size(); ++g) {
        const TopoGroup &group = topo.groups[g];
        const double n = topo.deviceCountUnder(static_cast<int>(g));
        double inner = 0;
        if (group.level == 0) {
            inner = n;
        } else {
            for (int c : group.children) {
                const double nc = topo.deviceCountUnder(c);
                inner += nc * nc;
            }
        }
        const double p = n * n - inner;
        if (p <= 0)
            continue;
        const LinkParams l = topo.achievableLink(static_cast<int>(g));
        pairs += p;
        bandwidth += p * l.bandwidth / std::max(1.0, l.oversubscription);
        latency += p * l.latency;
    }
    LinkParams flat;
    if (pairs <= 0) {
        flat = topo.levels.empty() ? LinkParams{} : topo.achievableLevelLink(0);
        flat.oversubscription = 1;
        return flat;
    }
    flat.bandwidth = bandwidth / pairs;
    flat.latency = latency / pairs;
    flat.oversubscription = 1;
    return flat;
}

Topology flatView(const Topology &topo)
{
    Topology flat = topo;
    LinkParams link = flatLinkOf(topo);
    // flatLinkOf() averages achievable links; every level of the view runs at one rate, so
    // the view is one scale-up domain and achievableLink() derates all of it: store the
    // nominal rate whose achievable share is that average.
    link.bandwidth /= flat.scaleUpEfficiency();
    for (TopoLevel &level : flat.levels)
        level.link = link;
    for (TopoGroup &group : flat.groups)
        group.linkOverride.reset();
    flat.reindex();
    return flat;
}

PlanResult FlatPlanner::plan(const Topology &topo, const ModelProfile &model,
                             const SearchOptions &options, const ProgressFn &progress,
                             const CancelToken &cancel) const
{
    const auto start = std::chrono::steady_clock::now();
    const Topology flat = flatView(topo);
    PlanResult inner = NestPlanner().plan(flat, model, options, progress, cancel);
    PlanResult result;
    result.cancelled = inner.cancelled;
    result.stats = inner.stats;
    result.message = inner.message;
    if (inner.found) {
        // The search's own valuation holds on the flat view (NEST's consistency check);
        // the time this planner reports is the real cluster's.
        result.found = true;
        result.plan = inner.plan;
        result.objective =
            evaluate(inner.plan, topo, model, searchCostOptions(options)).iterationTime;
        finishResult(result, topo, model, options);
        if (!inner.verified) {
            result.verified = false;
            result.message = "on the flat view: " + inner.message;
        }
        if (!result.report.feasible) {
            std::ostringstream s;
            s << "the flat-network plan does not run on the real cluster:";
            for (const std::string &r : result.report.reasons)
                s << " " << r;
            result.found = false;
            result.message = s.str();
        }
    }
    result.stats.wallSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

} // namespace nest
