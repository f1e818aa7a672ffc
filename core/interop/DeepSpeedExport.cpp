// The DeepSpeed writer: the config JSON (batch split, ZeRO, bf16, pipeline activation
// checkpointing), the pipeline partition, the launcher hostfile and a launch script that
// keeps the rank placement through the launcher's --include list. Keys from DeepSpeed's
// docs/_pages/config-json.md (v0.15.0); the launcher, topology and PipelineModule rules from
// microsoft/DeepSpeed's deepspeed/launcher/runner.py, runtime/pipe/topology.py and
// runtime/pipe/module.py (docs/interop.md).
#include "LaunchContext.h"
#include "SafeText.h"

#include <algorithm>
#include <functional>

namespace nest {

namespace {

const char *kVersion =
    "DeepSpeed v0.15 (docs/_pages/config-json.md; deepspeed/runtime/pipe/module.py, topology.py and "
    "launcher/runner.py at microsoft/DeepSpeed@00f47f03, @2eafdd39, @048b0d50), with Megatron-DeepSpeed's "
    "--tensor-model-parallel-size / --pipeline-model-parallel-size";

} // namespace

std::vector<ExportFile> writeDeepSpeed(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const std::vector<int> &split = c.result.runnable.stageBlocks;
    const ModelShape &m = c.shape;
    const RankMapping &ranks = c.ranks();

    // Layer list of the partition: 0 the embedding, 1..B the blocks, B+1 the head.
    std::vector<int> parts{0};
    for (size_t k = 0; k < split.size(); ++k)
        parts.push_back(parts.back() + split[k] + (k == 0 ? 1 : 0));
    parts.back() += 1;  // the head joins the last stage
    bool even = true;
    for (int b : split)
        even = even && b == split.front();
    // DeepSpeed's "type:REGEX" counts the layers whose class name matches: with
    // "transformer|embedding" the blocks and, in Megatron-DeepSpeed's GPTModelPipe with tied
    // embeddings, the input and the output EmbeddingPipe (the head): the split of
    // layers+embedding+loss, when every stage has the same number of those units.
    const bool tied = !c.request.model.layers.empty() && c.request.model.layers.back().tiedParams > 0;
    std::vector<int> units = split;
    if (!units.empty()) {
        ++units.front();
        ++units.back();
    }
    const bool unitEven = u.pipelineUnits == PipelineUnits::LayersEmbeddingLoss && tied &&
                          std::adjacent_find(units.begin(), units.end(), std::not_equal_to<>()) == units.end();
    if (u.pipelineUnits != PipelineUnits::Layers)
        even = unitEven;

    Json config = {
        {"train_batch_size", p.globalBatch},
        {"train_micro_batch_size_per_gpu", p.microBatch},
        {"gradient_accumulation_steps", p.numMicroBatches()},
        {"zero_optimization", {{"stage", u.zero}, {"overlap_comm", c.profile.gradReduceOverlap}}},
        {"bf16", {{"enabled", true}}},
        {"gradient_clipping", 1.0},
        {"steps_per_print", 10},
        {"pipeline", {{"activation_checkpoint_interval", u.recompute == Recompute::Full ? 1 : 0}}},
    };
    Json comment = Json::array();
    for (const std::string &l : c.headerLines(kVersion))
        comment.push_back(l);
    config["_comment"] = comment;

    Json partition = {
        {"partition_method", unitEven ? "type:transformer|embedding" : even ? "type:transformer" : "parameters"},
        {"num_stages", u.pp},
        {"parts", parts},
        {"blocks_per_stage", split},
        {"layers", "parts index the layer list [embedding, blocks 1..B, head]; stage s runs layers "
                   "parts[s] .. parts[s+1]-1"},
    };
    if (!even)
        partition["note"] = "DeepSpeed's PipelineModule has no partition_method for explicit boundaries; " +
                            c.stem + "_partition.py applies these parts";

    std::string include;
    for (size_t k = 0; k < ranks.hosts.size(); ++k)
        include += (k == 0 ? "" : "@") + ranks.hosts[k].host + ":" + ranks.visibleDevices(static_cast<int>(k));

    std::string script = "#!/usr/bin/env bash\n";
    script += commentBlock({"DeepSpeed launch of " + c.mainName + " with the planned rank placement (see its _comment).",
                            "The launcher numbers ranks host by host in hostfile order and slot by slot in --include",
                            "order (CUDA_VISIBLE_DEVICES keeps that order), so rank r runs on the device of " +
                                c.stem + ".ranks.json.",
                            "MEGATRON_DS_DIR points at a Megatron-DeepSpeed checkout."});
    script += "set -euo pipefail\n";
    script += "HERE=$(cd \"$(dirname \"$0\")\" && pwd)\n";
    script += "MEGATRON_DS_DIR=${MEGATRON_DS_DIR:-/workspace/Megatron-DeepSpeed}\n";
    script += "INCLUDE=" + shellQuote(include) + "\n";
    script += "MASTER_ADDR=${MASTER_ADDR:-" + shellQuote(ranks.hosts.front().host) + "}\n\n";
    script += "ARGS=(\n";
    script += "  --tensor-model-parallel-size " + std::to_string(u.tp) + "\n";
    script += "  --pipeline-model-parallel-size " + std::to_string(u.pp) + "\n";
    if (u.sp)
        script += "  --sequence-parallel\n";
    script += "  --num-layers " + std::to_string(m.layers) + "\n";
    script += "  --hidden-size " + std::to_string(m.hidden) + "\n";
    script += "  --ffn-hidden-size " + std::to_string(m.ffnHidden) + "\n";
    script += "  --num-attention-heads " + std::to_string(m.heads) + "\n";
    script += "  --seq-length " + std::to_string(p.seqLength) + "\n";
    script += "  --max-position-embeddings " + std::to_string(std::max(m.maxPositions, p.seqLength)) + "\n";
    script += "  --micro-batch-size " + std::to_string(p.microBatch) + "\n";
    script += "  --global-batch-size " + std::to_string(p.globalBatch) + "\n";
    if (u.recompute != Recompute::None)
        script += std::string("  --recompute-granularity ") + (u.recompute == Recompute::Full ? "full" : "selective") + "\n";
    script += "  --bf16\n";
    script += "  --deepspeed\n";
    script += "  --deepspeed_config \"$HERE\"/" + shellQuote(c.mainName) + "\n";
    script += ")\n\n";
    script += "exec deepspeed --hostfile \"$HERE\"/" + shellQuote(c.stem + ".hostfile") + " --include \"$INCLUDE\" \\\n";
    script += "  --master_addr \"$MASTER_ADDR\" --master_port \"${MASTER_PORT:-29500}\" \\\n";
    script += "  \"$MEGATRON_DS_DIR/pretrain_gpt.py\" \"${ARGS[@]}\" \"$@\"\n";

    // Names are text the user chose (a file name need not be UTF-8): invalid bytes become
    // U+FFFD instead of an exception.
    const auto replace = Json::error_handler_t::replace;
    std::vector<ExportFile> files{{c.mainName, config.dump(2, ' ', false, replace) + "\n", false},
                                  {c.stem + ".pipeline.json", partition.dump(2, ' ', false, replace) + "\n", false},
                                  {c.stem + ".sh", script, true}};
    if (!even) {
        std::string py = "# The planned pipeline stage boundaries for DeepSpeed (generated by NEST Planner).\n";
        py += "# DeepSpeed's PipelineModule partitions by 'parameters', 'uniform' or 'type:REGEX' only; this\n";
        py += "# subclass sets its stage bounds to PARTS (indices into the layer list, see " + oneLine(c.stem) +
              ".pipeline.json).\n";
        py += "# It relies on PipelineModule._partition_layers and _set_bounds of DeepSpeed v0.15.\n";
        py += "from deepspeed.pipe import PipelineModule\n\n";
        py += "PARTS = [";
        for (size_t i = 0; i < parts.size(); ++i)
            py += (i ? ", " : "") + std::to_string(parts[i]);
        py += "]\n\n\n";
        py += "class NestPipelineModule(PipelineModule):\n";
        py += "    def _partition_layers(self, method=\"uniform\"):\n";
        py += "        super()._partition_layers(method=\"uniform\")\n";
        py += "        self.parts = list(PARTS)\n";
        py += "        self._set_bounds(start=self.parts[self.stage_id], stop=self.parts[self.stage_id + 1])\n";
        files.push_back({c.stem + "_partition.py", py, false});
    }
    for (ExportFile &f : rankSideFiles(c, "deepspeed"))
        files.push_back(std::move(f));
    return files;
}

} // namespace nest
