// The torchtitan writer: a TOML job file (written with toml++) with the [parallelism]
// degrees, the schedule and each pipeline stage's modules, [training] batch and sequence,
// [activation_checkpoint]; a torchrun launch script keeping the rank placement, the rank
// map and the hostfile. Keys from torchtitan's torchtitan/config/job_config.py at
// pytorch/torchtitan@6404b932 (docs/interop.md).
#include "LaunchContext.h"
#include "SafeText.h"

#include <sstream>
#include <toml++/toml.h>

namespace nest {

namespace {

const char *kVersion =
    "torchtitan at pytorch/torchtitan@6404b932421f5ce382e7dac5ad381b2c17b1373c (torchtitan/config/job_config.py; "
    "mesh order from torchtitan/distributed/parallel_dims.py)";

const char *scheduleName(const Plan &p)
{
    switch (p.schedule) {
    case Schedule::GPipe: return "GPipe";
    case Schedule::Interleaved: return p.virtualStages > 1 ? "Interleaved1F1B" : "1F1B";
    case Schedule::OneFOneB: break;
    }
    return "1F1B";
}

} // namespace

std::vector<ExportFile> writeTorchtitan(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const std::vector<int> &split = c.result.runnable.stageBlocks;
    const ModelShape &m = c.shape;
    const bool shard = u.zero >= 2 && u.dp > 1;

    // Each stage's modules: the embedding with the first, the final norm and output with
    // the last (torchtitan's Llama module names).
    toml::array parts;
    int block = 0;
    for (size_t s = 0; s < split.size(); ++s) {
        toml::array names;
        if (s == 0)
            names.push_back("tok_embeddings");
        for (int i = 0; i < split[s]; ++i)
            names.push_back("layers." + std::to_string(block++));
        if (s + 1 == split.size()) {
            names.push_back("norm");
            names.push_back("output");
        }
        parts.push_back(std::move(names));
    }

    toml::table parallelism{
        {"data_parallel_replicate_degree", shard ? 1 : u.dp},
        {"data_parallel_shard_degree", shard ? u.dp : 1},
        {"fsdp_reshard_after_forward", u.zero == 2 ? "never" : "default"},
        {"tensor_parallel_degree", u.tp},
        {"context_parallel_degree", u.cp},
        {"pipeline_parallel_degree", u.pp},
        {"pipeline_parallel_schedule", scheduleName(p)},
        {"pipeline_parallel_microbatch_size", p.microBatch},
    };
    if (u.pp > 1)
        parallelism.insert("module_fqns_per_model_part", parts);
    // Without a pipeline torchtitan accumulates gradients over global / (local x dp) steps.
    const int local = u.pp > 1 ? p.globalBatch / u.dp : p.microBatch;
    toml::table job{
        {"job", toml::table{{"description", "NEST plan for " + c.request.model.name + " on " + c.request.topology.name}}},
        {"model", toml::table{{"name", m.family == "llama" || m.family == "mixtral" ? "llama3" : m.family}}},
        {"training", toml::table{{"local_batch_size", local},
                                 {"global_batch_size", p.globalBatch},
                                 {"seq_len", p.seqLength},
                                 {"steps", 100},
                                 {"mixed_precision_param", "bfloat16"}}},
        {"parallelism", parallelism},
        {"activation_checkpoint",
         toml::table{{"mode", toString(u.recompute)}, {"selective_ac_option", "op"}}},
    };
    std::ostringstream body;
    body << job;
    const std::string tomlText = commentBlock(c.headerLines(kVersion)) + body.str() + "\n";

    std::string script = "#!/usr/bin/env bash\n";
    script += commentBlock({"torchtitan launch of " + c.mainName + " with the planned rank placement (see its header).",
                            "Run on every host of " + c.stem + ".hostfile; TORCHTITAN_DIR points at the checkout."});
    script += "set -euo pipefail\n\n";
    script += nodeSelectionBash(c);
    script += "TORCHTITAN_DIR=${TORCHTITAN_DIR:-/workspace/torchtitan}\n";
    script += "HERE=$(cd \"$(dirname \"$0\")\" && pwd)\n\n";
    script += "cd \"$TORCHTITAN_DIR\"\n";
    script += torchrunExec("-m torchtitan.train --job.config_file \"$HERE\"/" + shellQuote(c.mainName));

    std::vector<ExportFile> files{{c.mainName, tomlText, false}, {c.stem + ".sh", script, true}};
    for (ExportFile &f : rankSideFiles(c, "torchtitan"))
        files.push_back(std::move(f));
    return files;
}

} // namespace nest
