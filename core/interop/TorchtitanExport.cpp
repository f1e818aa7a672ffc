// The torchtitan writer: a TOML job file (written with toml++) with the [parallelism]
// degrees, the schedule and each pipeline stage's modules, [training] batch and sequence,
// [activation_checkpoint]; a torchrun launch script keeping the rank placement, the rank
// map and the hostfile. Keys from torchtitan's torchtitan/config/job_config.py at
// pytorch/torchtitan@6404b932 (docs/interop.md).
#include "FrameworkModels.h"
#include "FrameworkPrecision.h"
#include "LaunchContext.h"
#include "SafeText.h"

#include <sstream>
#include <toml++/toml.h>

namespace nest {

namespace {

const char *kTorchtitanVersion =
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

namespace {

// Each stage's modules: the embedding with the first, the final norm and output with
// the last (torchtitan's Llama module names).
toml::array modulesPerStage(const std::vector<int> &split)
{
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
    return parts;
}

toml::table parallelismTable(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const bool shard = u.zero >= 2 && u.dp > 1;
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
        parallelism.insert("module_fqns_per_model_part", modulesPerStage(c.result.runnable.stageBlocks));
    return parallelism;
}

toml::table trainingTable(const LaunchContext &c, const TorchtitanPrecision &precision)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    // Without a pipeline torchtitan accumulates gradients over global / (local x dp) steps.
    const int local = u.pp > 1 ? p.globalBatch / u.dp : p.microBatch;
    toml::table training{{"local_batch_size", local},
                         {"global_batch_size", p.globalBatch},
                         {"seq_len", p.seqLength},
                         {"steps", c.request.iterations},
                         // PLACEHOLDERS (the header says so): the dataset torchtitan loads.
                         {"dataset", "c4"},
                         {"dataset_path", "PLACEHOLDER_dataset_path"}};
    for (auto it = precision.training.begin(); it != precision.training.end(); ++it)
        training.insert(it.key(), it.value().get<std::string>());
    return training;
}

// A low precision (issue 46): the model converter and its table.
void addConverters(toml::table &job, const TorchtitanPrecision &precision)
{
    if (precision.converters.empty())
        return;
    toml::array converters;
    for (const std::string &name : precision.converters)
        converters.push_back(name);
    job["model"].as_table()->insert("converters", converters);
    for (const auto &[name, table] : {std::pair<const char *, const Json *>{"float8", &precision.float8},
                                      std::pair<const char *, const Json *>{"mx", &precision.mx}}) {
        if (table->empty())
            continue;
        toml::table t;
        for (auto it = table->begin(); it != table->end(); ++it) {
            if (it.value().is_boolean())
                t.insert(it.key(), it.value().get<bool>());
            else if (it.value().is_string())
                t.insert(it.key(), it.value().get<std::string>());
            else if (it.value().is_array()) {
                toml::array list;
                for (const Json &v : it.value())
                    list.push_back(v.get<std::string>());
                t.insert(it.key(), list);
            }
        }
        job.insert(name, t);
    }
}

// The job's TOML, its header comment first.
std::string torchtitanToml(const LaunchContext &c)
{
    // exportPlan refuses a model torchtitan has no flavor of (FrameworkModels.h).
    const std::optional<TorchtitanFlavor> flavor = torchtitanFlavor(c.shape);
    const TorchtitanPrecision precision = torchtitanPrecision(c.result.runnable.plan);
    toml::table job{
        {"job", toml::table{{"description", "NEST plan for " + c.request.model.name + " on " + c.request.topology.name}}},
        {"model", toml::table{{"name", flavor ? flavor->name : "llama3"},
                              {"flavor", flavor ? flavor->flavor : "none"},
                              {"tokenizer_path", "PLACEHOLDER_tokenizer_path"}}},
        {"training", trainingTable(c, precision)},
        {"parallelism", parallelismTable(c)},
        {"activation_checkpoint",
         toml::table{{"mode", toString(c.layout().recompute)}, {"selective_ac_option", "op"}}},
    };
    addConverters(job, precision);
    std::ostringstream body;
    body << job;
    std::vector<std::string> header = c.headerLines(kTorchtitanVersion);
    if (flavor)
        header.push_back("Model: torchtitan's " + std::string(flavor->name) + " flavor " + flavor->flavor +
                         ", whose shape is the planned model's.");
    header.push_back("PLACEHOLDERS to fill in: model.tokenizer_path (the model's tokenizer directory) and "
                     "training.dataset / training.dataset_path (the data); NEST knows the model, not the data.");
    return commentBlock(header) + body.str() + "\n";
}

} // namespace

std::vector<ExportFile> writeTorchtitan(const LaunchContext &c)
{
    std::string script = "#!/usr/bin/env bash\n";
    script += commentBlock({"torchtitan launch of " + c.mainName + " with the planned rank placement (see its header).",
                            "Run on every host of " + c.stem + ".hostfile; TORCHTITAN_DIR points at the checkout."});
    script += "set -euo pipefail\n\n";
    script += nodeSelectionBash(c);
    script += "TORCHTITAN_DIR=${TORCHTITAN_DIR:-/workspace/torchtitan}\n";
    script += "HERE=$(cd \"$(dirname \"$0\")\" && pwd)\n\n";
    script += "cd \"$TORCHTITAN_DIR\"\n";
    script += torchrunExec("-m torchtitan.train --job.config_file \"$HERE\"/" + shellQuote(c.mainName));

    std::vector<ExportFile> files{{c.mainName, torchtitanToml(c), false}, {c.stem + ".sh", script, true}};
    for (ExportFile &f : rankSideFiles(c, "torchtitan"))
        files.push_back(std::move(f));
    return files;
}

} // namespace nest
