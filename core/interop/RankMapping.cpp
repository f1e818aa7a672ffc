#include "RankMapping.h"

#include "PlanBuilder.h"

#include <map>

namespace nest {

namespace {

int sizeOf(const std::string &dim, const RankSizes &s)
{
    if (dim == "tp")
        return s.tp;
    if (dim == "cp")
        return s.cp;
    if (dim == "ep")
        return s.ep;
    if (dim == "dp")
        return s.dp / s.ep;
    return s.pp;
}

} // namespace

PlanCoordinate coordinateOfRank(int rank, const std::vector<std::string> &order, const RankSizes &sizes)
{
    std::map<std::string, int> coord;
    int rest = rank;
    for (const std::string &dim : order) {
        const int n = sizeOf(dim, sizes);
        coord[dim] = rest % n;
        rest /= n;
    }
    PlanCoordinate at;
    at.stage = coord["pp"];
    at.replica = coord["dp"] * sizes.ep + coord["ep"];
    at.cp = coord["cp"];
    at.tp = coord["tp"];
    return at;
}

RankSizes rankSizesOf(const Plan &plan)
{
    RankSizes s;
    if (plan.stages.empty())
        return s;
    s.tp = plan.stages.front().tp;
    s.cp = plan.stages.front().cp;
    // An ep that does not divide dp folds over tp x cp x dp (Megatron-Core's expert rank
    // generator): the dense ranks have no ep dimension then.
    s.ep = plan.dp % std::max(plan.stages.front().ep, 1) == 0 ? plan.stages.front().ep : 1;
    s.dp = plan.dp;
    s.pp = plan.pipelineDepth();
    return s;
}

int deviceAt(const Plan &plan, const PlanCoordinate &at)
{
    const StagePlan &st = plan.stages[static_cast<size_t>(at.stage)];
    return st.devices[static_cast<size_t>(at.replica)][static_cast<size_t>(at.cp * st.tp + at.tp)];
}

std::string RankMapping::hostfile() const
{
    std::string out;
    for (const HostSlots &h : hosts)
        out += h.host + " slots=" + std::to_string(h.gpus.size()) + "\n";
    return out;
}

std::string RankMapping::visibleDevices(int nodeRank) const
{
    std::string out;
    for (int g : hosts[static_cast<size_t>(nodeRank)].gpus)
        out += (out.empty() ? "" : ",") + std::to_string(g);
    return out;
}

Json RankMapping::toJson() const
{
    Json hostList = Json::array();
    for (size_t k = 0; k < hosts.size(); ++k)
        hostList.push_back({{"node_rank", k},
                            {"host", hosts[k].host},
                            {"slots", hosts[k].gpus.size()},
                            {"cuda_visible_devices", hosts[k].gpus}});
    Json rankList = Json::array();
    for (const RankPlacement &r : ranks)
        rankList.push_back({{"rank", r.rank},
                            {"host", hosts[static_cast<size_t>(r.nodeRank)].host},
                            {"node_rank", r.nodeRank},
                            {"local_rank", r.localRank},
                            {"gpu", r.gpu},
                            {"device", r.device},
                            {"stage", r.at.stage},
                            {"replica", r.at.replica},
                            {"cp", r.at.cp},
                            {"tp", r.at.tp}});
    return {{"format", "nest-rank-map"},
            {"order", order},
            {"world_size", sizes.world()},
            {"nnodes", hosts.size()},
            {"nproc_per_node", procsPerNode},
            {"hosts", hostList},
            {"ranks", rankList}};
}

Result<RankMapping> mapRanks(const Plan &plan, const Topology &topo, const std::string &order)
{
    using R = Result<RankMapping>;
    const auto dims = parseRankOrder(order);
    if (!dims)
        return R::failure(dims.error());
    RankMapping m;
    m.order = order;
    m.sizes = rankSizesOf(plan);
    const int world = m.sizes.world();
    if (world <= 0 || plan.stages.empty())
        return R::failure("the plan has no ranks");

    // Ranks per node: every node that runs a rank must run the same number G.
    std::map<int, int> perNode;
    std::vector<PlanCoordinate> coordOfRank(static_cast<size_t>(world));
    std::vector<int> deviceOfRank(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
        coordOfRank[static_cast<size_t>(r)] = coordinateOfRank(r, *dims, m.sizes);
        const int d = deviceAt(plan, coordOfRank[static_cast<size_t>(r)]);
        deviceOfRank[static_cast<size_t>(r)] = d;
        ++perNode[topo.devices[static_cast<size_t>(d)].node];
    }
    const int g = perNode.begin()->second;
    for (const auto &[node, count] : perNode)
        if (count != g)
            return R::failure("the plan runs " + std::to_string(g) + " ranks on node " +
                              topo.groups[static_cast<size_t>(perNode.begin()->first)].name + " but " +
                              std::to_string(count) + " on node " + topo.groups[static_cast<size_t>(node)].name +
                              "; a launcher starts the same number of processes on every node");
    m.procsPerNode = g;

    // Launcher block k (ranks k*G .. k*G+G-1) must lie on one node: that node is host k.
    for (int k = 0; k * g < world; ++k) {
        const int first = k * g;
        HostSlots h;
        h.node = topo.devices[static_cast<size_t>(deviceOfRank[static_cast<size_t>(first)])].node;
        h.host = topo.groups[static_cast<size_t>(h.node)].name;
        for (int i = 0; i < g; ++i) {
            const int r = first + i;
            const Device &dev = topo.devices[static_cast<size_t>(deviceOfRank[static_cast<size_t>(r)])];
            if (dev.node != h.node)
                return R::failure("under the rank order " + order + ", ranks " + std::to_string(first) + " to " +
                                  std::to_string(first + g - 1) + " start on one node, but the plan puts rank " +
                                  std::to_string(first) + " on node " + h.host + " and rank " + std::to_string(r) +
                                  " on node " + topo.groups[static_cast<size_t>(dev.node)].name);
            h.gpus.push_back(dev.indexInNode);
            RankPlacement p;
            p.rank = r;
            p.at = coordOfRank[static_cast<size_t>(r)];
            p.device = dev.id;
            p.nodeRank = k;
            p.localRank = i;
            p.gpu = dev.indexInNode;
            m.ranks.push_back(p);
        }
        m.hosts.push_back(std::move(h));
    }
    return m;
}

std::vector<int> rankDevicesFromJson(const Json &map, const std::string &path)
{
    requireObject(map, path);
    const std::string format = getString(map, "format", path);
    if (format != "nest-rank-map")
        throw JsonError(childPath(path, "format"), "expected \"nest-rank-map\", found \"" + format + "\"");
    const std::string ranksPath = childPath(path, "ranks");
    const Json &ranks = requireKey(map, "ranks", path);
    requireArray(ranks, ranksPath);
    std::vector<int> devices(ranks.size(), -1);
    for (size_t i = 0; i < ranks.size(); ++i) {
        const std::string at = childPath(ranksPath, i);
        requireObject(ranks[i], at);
        const long long rank = getInt(ranks[i], "rank", at, 0, static_cast<long long>(ranks.size()) - 1);
        if (devices[static_cast<size_t>(rank)] >= 0)
            throw JsonError(childPath(at, "rank"), "rank " + std::to_string(rank) + " is listed twice");
        devices[static_cast<size_t>(rank)] =
            static_cast<int>(getInt(ranks[i], "device", at, 0, Topology::maxDevices - 1));
    }
    return devices;
}

} // namespace nest
