// The NEST artifact writer: the output JSON of the paper's solver (stages with their layer
// ids and devices per stage, data and tensor degrees, time per batch), read from
// NEST-repository/nest Solver/device_placement/device_placement.cpp at b9c1b016
// (docs/interop.md), so a plan compares with the paper's tooling. Layer ids as the
// artifact numbers them: -1 the embedding, 0..L-1 the blocks; the head, which the
// artifact's graphs fold into the last block, is L. Times are in seconds ("timeUnit").
#include "LaunchContext.h"

namespace nest {

std::vector<ExportFile> writeNestArtifact(const LaunchContext &c)
{
    const Plan &p = c.result.runnable.plan;
    const UniformLayout &u = c.layout();
    const ModelProfile &model = c.request.model;

    // Our layer index -> the artifact's node id.
    std::vector<int> nodeId(static_cast<size_t>(model.layerCount()));
    int blocks = 0;
    for (int l = 0; l < model.layerCount(); ++l) {
        const LayerKind k = model.layers[static_cast<size_t>(l)].kind;
        nodeId[static_cast<size_t>(l)] = k == LayerKind::Embedding ? -1 : blocks;
        if (isDecoderBlock(k) || k == LayerKind::Mtp || k == LayerKind::Head)
            ++blocks;
    }

    Json stages = Json::array();
    Json skeleton = Json::array();
    for (const StagePlan &st : p.stages) {
        Json nodes = Json::array();
        for (int l = st.firstLayer; l < st.endLayer; ++l)
            nodes.push_back(nodeId[static_cast<size_t>(l)]);
        stages.push_back({{"nodes", nodes}, {"devicesForStage", st.width()}, {"devices", st.devices}});
        for (int d : st.devices.front())
            skeleton.push_back({d, nodes});
    }
    Json header = Json::array();
    for (const std::string &l : c.headerLines("the NEST artifact's solver output (NEST-repository/nest@b9c1b016)"))
        header.push_back(l);
    Json out = {
        {"stages", stages},
        {"dataParallelDegree", p.dp},
        {"tensorParallelDegree", u.tp},
        {"finalTimePerBatch", c.result.exported.iterationTime},
        {"networkSkeleton", skeleton},
        {"timeUnit", "s"},
        {"ep_degree", u.ep},
        {"cp_degree", u.cp},
        {"sp_enabled", u.sp},
        {"mbsInBatch", p.numMicroBatches()},
        {"microBatch", p.microBatch},
        {"globalBatch", p.globalBatch},
        {"zeroStage", u.zero},
        {"activationRecomputation", u.recompute != Recompute::None},
        {"_comment", header},
    };
    return {{c.mainName, out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n", false}};
}

} // namespace nest
