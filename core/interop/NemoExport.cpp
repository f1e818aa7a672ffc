// The NeMo writer: the whole Hydra configuration of NeMo's megatron_gpt_pretraining.py (trainer,
// exp_manager and model sections with the keys megatron_gpt_config.yaml defines, written with
// yaml-cpp), a torchrun launch script that hands it over as --config-path / --config-name and
// keeps the rank placement, the rank map and the hostfile. Keys from NeMo's
// examples/nlp/language_modeling/conf/megatron_gpt_config.yaml and the launcher's
// conf/training/llama/llama3_1_70b.yaml and mixtral/mixtral_8x7b.yaml (docs/interop.md).
#include "FrameworkPrecision.h"
#include "LaunchContext.h"
#include "SafeText.h"

#include <yaml-cpp/yaml.h>

namespace nest {

namespace {

const char *kNemoVersion =
    "NeMo 1.x (examples/nlp/language_modeling/conf/megatron_gpt_config.yaml; Megatron-Core underneath) as "
    "NVIDIA/NeMo-Framework-Launcher@1ab2c781 writes it (launcher_scripts/conf/training/llama/llama3_1_70b.yaml)";

// OmegaConf's mandatory value: NeMo stops with "Missing mandatory value" until it is set.
const char *kFillIn = "???";

void scalar(YAML::Emitter &y, const Json &v)
{
    if (v.is_boolean())
        y << v.get<bool>();
    else if (v.is_number_integer())
        y << v.get<long long>();
    else if (v.is_number())
        y << v.get<double>();
    else if (v.is_string())
        y << v.get<std::string>();
    else
        y << YAML::Null;
}

void keys(YAML::Emitter &y, const Json &map)
{
    for (auto it = map.begin(); it != map.end(); ++it) {
        y << YAML::Key << it.key() << YAML::Value;
        scalar(y, it.value());
    }
}

template <class T>
void kv(YAML::Emitter &y, const char *key, const T &value)
{
    y << YAML::Key << key << YAML::Value << value;
}

void null(YAML::Emitter &y, const char *key)
{
    y << YAML::Key << key << YAML::Value << YAML::Null;
}

} // namespace

namespace {

std::string runNameOf(const LaunchContext &c)
{
    return "nest_" + c.request.model.name;
}

void emitTrainer(YAML::Emitter &y, const LaunchContext &c, const NemoPrecision &precision)
{
    y << YAML::Key << "trainer" << YAML::Value << YAML::BeginMap;
    kv(y, "num_nodes", c.ranks().hosts.size());
    kv(y, "devices", c.ranks().procsPerNode);
    kv(y, "accelerator", "gpu");
    keys(y, precision.trainer);
    kv(y, "logger", false);
    kv(y, "enable_checkpointing", false);
    kv(y, "use_distributed_sampler", false);
    kv(y, "max_epochs", -1);
    kv(y, "max_steps", c.request.iterations);
    kv(y, "log_every_n_steps", 10);
    kv(y, "val_check_interval", c.request.iterations);
    kv(y, "limit_val_batches", 1);
    kv(y, "limit_test_batches", 1);
    kv(y, "accumulate_grad_batches", 1);
    kv(y, "gradient_clip_val", 1.0);
    kv(y, "benchmark", false);
    kv(y, "enable_model_summary", false);
    y << YAML::EndMap;
}

void emitExpManager(YAML::Emitter &y, const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    y << YAML::Key << "exp_manager" << YAML::Value << YAML::BeginMap;
    null(y, "explicit_log_dir");
    null(y, "exp_dir");
    kv(y, "name", runNameOf(c));
    kv(y, "create_wandb_logger", false);
    kv(y, "resume_if_exists", true);
    kv(y, "resume_ignore_no_checkpoint", true);
    kv(y, "create_checkpoint_callback", true);
    y << YAML::Key << "checkpoint_callback_params" << YAML::Value << YAML::BeginMap;
    kv(y, "monitor", "val_loss");
    kv(y, "save_top_k", 1);
    kv(y, "mode", "min");
    kv(y, "always_save_nemo", false);
    kv(y, "save_nemo_on_train_end", false);
    kv(y, "model_parallel_size", u.tp * u.pp);
    kv(y, "async_save", false);
    y << YAML::EndMap;
    y << YAML::EndMap;
}

// model: the batch and the parallel layout.
void emitModelLayout(YAML::Emitter &y, const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const bool interleaved = p.schedule == Schedule::Interleaved && p.virtualStages > 1;
    kv(y, "mcore_gpt", true);
    kv(y, "micro_batch_size", p.microBatch);
    kv(y, "global_batch_size", p.globalBatch);
    null(y, "rampup_batch_size");
    kv(y, "tensor_model_parallel_size", u.tp);
    kv(y, "pipeline_model_parallel_size", u.pp);
    y << YAML::Key << "virtual_pipeline_model_parallel_size" << YAML::Value;
    if (interleaved)
        y << p.virtualStages;
    else
        y << YAML::Null;
    if (u.pipelineUnits != PipelineUnits::Layers) {
        // Megatron-Core TransformerConfig fields, which NeMo's build_transformer_config reads
        // from the model config by name: the embedding / the loss count as one layer each of
        // the even split (of every chunk's, with interleaving).
        kv(y, "account_for_embedding_in_pipeline_split", countsEmbedding(u.pipelineUnits));
        kv(y, "account_for_loss_in_pipeline_split", countsLoss(u.pipelineUnits));
    }
    kv(y, "context_parallel_size", u.cp);
    kv(y, "expert_model_parallel_size", u.ep);
    kv(y, "sequence_parallel", u.sp);
}

// model: the network's shape.
void emitModelShape(YAML::Emitter &y, const LaunchContext &c)
{
    const Plan &p = c.result.runnable.plan;
    const ModelShape &m = c.shape;
    kv(y, "encoder_seq_length", p.seqLength);
    kv(y, "max_position_embeddings", std::max(m.maxPositions, p.seqLength));
    kv(y, "num_layers", m.layers);
    kv(y, "hidden_size", m.hidden);
    kv(y, "ffn_hidden_size", m.ffnHidden);
    kv(y, "num_attention_heads", m.heads);
    kv(y, "num_query_groups", m.kvHeads);
    kv(y, "normalization", m.rmsNorm ? "rmsnorm" : "layernorm");
    kv(y, "activation", m.gatedMlp ? "fast-swiglu" : "gelu");
    kv(y, "bias", m.linearBias);
    kv(y, "position_embedding_type", m.rotary ? "rope" : "learned_absolute");
    kv(y, "share_embeddings_and_output_weights", m.tiedEmbeddings);
    kv(y, "make_vocab_size_divisible_by", 128);
    kv(y, "hidden_dropout", 0.0);
    kv(y, "attention_dropout", 0.0);
    if (m.experts > 1) {
        kv(y, "num_moe_experts", m.experts);
        kv(y, "moe_router_topk", m.topK);
        if (m.routerGroups > 1) {  // group-limited routing (MegatronExport.cpp)
            kv(y, "moe_router_num_groups", m.routerGroups);
            kv(y, "moe_router_group_topk", m.routerGroupTopK);
        }
    }
}

// model: recomputation, precision and overlap.
void emitModelRuntime(YAML::Emitter &y, const LaunchContext &c, const NemoPrecision &precision)
{
    const UniformLayout &u = c.layout();
    y << YAML::Key << "activations_checkpoint_granularity" << YAML::Value;
    if (u.recompute == Recompute::None)
        y << YAML::Null;
    else
        y << (u.recompute == Recompute::Full ? "full" : "selective");
    y << YAML::Key << "activations_checkpoint_method" << YAML::Value;
    if (u.recompute == Recompute::Full)
        y << "uniform";
    else
        y << YAML::Null;
    y << YAML::Key << "activations_checkpoint_num_layers" << YAML::Value;
    if (u.recompute == Recompute::Full)
        y << 1;
    else
        y << YAML::Null;
    keys(y, precision.model);
    kv(y, "gradient_as_bucket_view", true);
    kv(y, "ub_tp_comm_overlap", c.profile.tpOverlap && u.sp);
    kv(y, "seed", 1234);
}

// Placeholders the user fills in: NEST knows the model's shape, not its tokenizer or data.
void emitTokenizerAndData(YAML::Emitter &y, const LaunchContext &c)
{
    y << YAML::Key << "tokenizer" << YAML::Value << YAML::BeginMap;
    kv(y, "library", "huggingface");
    kv(y, "type", kFillIn);
    null(y, "model");
    null(y, "vocab_file");
    null(y, "merge_file");
    y << YAML::EndMap;
    y << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
    kv(y, "data_prefix", kFillIn);
    null(y, "index_mapping_dir");
    kv(y, "data_impl", "mmap");
    kv(y, "splits_string", "900,50,50");
    kv(y, "seq_length", c.result.runnable.plan.seqLength);
    kv(y, "skip_warmup", true);
    kv(y, "num_workers", 2);
    kv(y, "dataloader_type", "single");
    y << YAML::EndMap;
}

void emitOptim(YAML::Emitter &y, const LaunchContext &c)
{
    const bool distributedAdam = c.layout().zero >= 1;
    y << YAML::Key << "optim" << YAML::Value << YAML::BeginMap;
    kv(y, "name", distributedAdam ? "distributed_fused_adam" : "fused_adam");
    if (distributedAdam) {
        kv(y, "overlap_grad_sync", c.profile.gradReduceOverlap);
        kv(y, "overlap_param_sync", c.profile.paramGatherOverlap);
    }
    kv(y, "lr", 1.0e-4);
    kv(y, "weight_decay", 0.1);
    y << YAML::Key << "betas" << YAML::Value << YAML::Flow << YAML::BeginSeq << 0.9 << 0.95 << YAML::EndSeq;
    y << YAML::Key << "sched" << YAML::Value << YAML::BeginMap;
    kv(y, "name", "CosineAnnealing");
    kv(y, "warmup_steps", std::max(1, c.request.iterations / 10));
    kv(y, "constant_steps", 0);
    kv(y, "min_lr", 1.0e-5);
    y << YAML::EndMap;
    y << YAML::EndMap;
}

// The whole Hydra configuration, its header comment first.
std::string nemoYaml(const LaunchContext &c)
{
    const NemoPrecision precision = nemoPrecision(c.result.runnable.plan);
    const std::string runName = runNameOf(c);
    YAML::Emitter y;
    y << YAML::BeginMap;
    y << YAML::Key << "run" << YAML::Value << YAML::BeginMap;
    kv(y, "name", runName);
    y << YAML::EndMap;
    kv(y, "name", runName);
    emitTrainer(y, c, precision);
    emitExpManager(y, c);
    y << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
    emitModelLayout(y, c);
    emitModelShape(y, c);
    emitModelRuntime(y, c, precision);
    emitTokenizerAndData(y, c);
    emitOptim(y, c);
    y << YAML::EndMap;
    y << YAML::EndMap;

    std::vector<std::string> header = c.headerLines(kNemoVersion);
    header.push_back("This file is the whole Hydra configuration of megatron_gpt_pretraining.py.");
    header.push_back("PLACEHOLDERS to fill in (the value " + std::string(kFillIn) +
                     ", OmegaConf's mandatory value; NeMo stops until they are set):");
    header.push_back("  model.tokenizer.type: the Hugging Face tokenizer (name or path) of the model; its vocabulary, "
                     "padded to 128, must be the planned " + std::to_string(c.shape.vocab) + ";");
    header.push_back("  model.data.data_prefix: the Megatron-format training data ([weight, prefix, ...] or one prefix).");
    header.push_back("Both may also be given on the command line of the launch script: model.data.data_prefix=[...].");
    std::string yaml = commentBlock(header);
    yaml += std::string(y.c_str()) + "\n";
    return yaml;
}

std::string nemoLaunchScript(const LaunchContext &c)
{
    const std::string &yamlName = c.mainName;
    std::string script = "#!/usr/bin/env bash\n";
    script += commentBlock({"NeMo launch of " + yamlName + " with the planned rank placement (see its header).",
                            "Run on every host of " + c.stem + ".hostfile; NEMO_DIR points at the NeMo checkout.",
                            "Fill in the placeholders of " + yamlName + " first (model.tokenizer.type, "
                            "model.data.data_prefix), or append them as Hydra overrides to this script's arguments."});
    script += "set -euo pipefail\n\n";
    script += nodeSelectionBash(c);
    script += "NEMO_DIR=${NEMO_DIR:-/opt/NeMo}\n";
    script += "CONFIG_DIR=$(cd \"$(dirname \"$0\")\" && pwd)\n";
    script += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n\n";
    script += torchrunExec("\"$NEMO_DIR/examples/nlp/language_modeling/megatron_gpt_pretraining.py\" "
                           "--config-path=\"$CONFIG_DIR\" --config-name=" + shellQuote(yamlName));
    return script;
}

} // namespace

std::vector<ExportFile> writeNemo(const LaunchContext &c)
{
    std::vector<ExportFile> files{{c.mainName, nemoYaml(c), false}, {c.stem + ".sh", nemoLaunchScript(c), true}};
    for (ExportFile &f : rankSideFiles(c, "nemo"))
        files.push_back(std::move(f));
    return files;
}

} // namespace nest
