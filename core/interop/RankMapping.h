#pragma once
// Which process runs on which device when a framework launches a plan (docs/interop.md).
//
// A framework numbers its processes (global ranks) and derives each rank's parallel
// coordinates from a fixed rule: the dimensions in the order they vary, fastest first
// (Megatron-Core's default "tp-cp-ep-dp-pp": ranks 0..tp-1 are one tensor-parallel group).
// The launcher (torchrun, the DeepSpeed launcher) gives node rank k the global ranks
// k*G .. k*G+G-1 and local rank i the i-th GPU of CUDA_VISIBLE_DEVICES. So the plan's
// placement survives when the hosts are listed in the right order and each host's
// CUDA_VISIBLE_DEVICES is the right permutation: mapRanks() derives both from the plan's
// device ids, or says why no such listing exists.
#include "JsonUtil.h"
#include "Plan.h"
#include "Result.h"
#include "Topology.h"

#include <string>
#include <vector>

namespace nest {

// The sizes of the rank dimensions: tp, cp, ep (expert-parallel replicas), dpOuter =
// dp / ep (data-parallel replicas of the expert groups) and pp. A plan's replica r is
// dpOuter rank r / ep, ep rank r % ep (PlanBuilder's rule).
struct RankSizes {
    int tp = 1, cp = 1, ep = 1, dp = 1, pp = 1;  // dp: all replicas (ep divides it)
    int world() const { return tp * cp * dp * pp; }
};

// Where a rank sits in the plan: its pipeline stage (physical, 0..pp-1), data-parallel
// replica, context-parallel and tensor-parallel rank.
struct PlanCoordinate {
    int stage = 0, replica = 0, cp = 0, tp = 0;
    bool operator==(const PlanCoordinate &) const = default;
};

// The coordinate of global rank `rank` under `order` (a parseRankOrder() list, fastest
// first).
PlanCoordinate coordinateOfRank(int rank, const std::vector<std::string> &order, const RankSizes &sizes);
// The sizes of a plan whose stages share one width (tp, cp, ep).
RankSizes rankSizesOf(const Plan &plan);
// The device a plan puts a coordinate on.
int deviceAt(const Plan &plan, const PlanCoordinate &at);

struct RankPlacement {
    int rank = 0;
    PlanCoordinate at;
    int device = 0;     // the plan's device id
    int nodeRank = 0;   // position of its host in the host list
    int localRank = 0;  // rank - nodeRank * procsPerNode
    int gpu = 0;        // index of the device inside its node (CUDA_VISIBLE_DEVICES entry)
};

struct HostSlots {
    std::string host;       // the node's name in the cluster
    int node = 0;           // its group index in the topology
    std::vector<int> gpus;  // GPU index inside the node of local rank 0, 1, ...
};

struct RankMapping {
    std::string order;                 // as the framework writes it, e.g. "tp-cp-ep-dp-pp"
    RankSizes sizes;
    int procsPerNode = 0;              // G: processes per host
    std::vector<HostSlots> hosts;      // in node-rank order
    std::vector<RankPlacement> ranks;  // by global rank

    // A hostfile, one line per host: "HOST slots=G" (DeepSpeed / OpenMPI syntax).
    std::string hostfile() const;
    // "0,1,2,..." for the host at `nodeRank`.
    std::string visibleDevices(int nodeRank) const;
    // {"format": "nest-rank-map", "order", "world_size", "nnodes", "nproc_per_node",
    //  "hosts": [{"node_rank", "host", "slots", "cuda_visible_devices"}],
    //  "ranks": [{"rank", "host", "node_rank", "local_rank", "gpu", "device", "stage",
    //             "replica", "cp", "tp"}]}
    Json toJson() const;
};

// The launch listing that puts every rank of `plan` (its stages sharing one width) on the
// plan's device under the framework's rank `order`. Fails, with the first rank that cannot
// be placed, when some launcher block of G consecutive ranks spans two nodes or the nodes
// run different numbers of ranks.
Result<RankMapping> mapRanks(const Plan &plan, const Topology &topo, const std::string &order);

// The device of every rank of a "nest-rank-map" JSON (ranks[i].device, in rank order), as
// `nest-cli evaluate --rank-map` reads it back. Throws JsonError.
std::vector<int> rankDevicesFromJson(const Json &map, const std::string &path);

} // namespace nest
