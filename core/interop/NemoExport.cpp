// The NeMo writer: a NeMo-Framework-Launcher style training YAML (trainer and model keys,
// written with yaml-cpp), a torchrun launch script for megatron_gpt_pretraining.py that
// keeps the rank placement, the rank map and the hostfile. Keys from the launcher's
// conf/training/llama/llama3_1_70b.yaml and mixtral/mixtral_8x7b.yaml (docs/interop.md).
#include "LaunchContext.h"
#include "SafeText.h"

#include <yaml-cpp/yaml.h>

namespace nest {

namespace {

const char *kVersion =
    "NeMo 1.x as NVIDIA/NeMo-Framework-Launcher@1ab2c781 writes it "
    "(launcher_scripts/conf/training/llama/llama3_1_70b.yaml; Megatron-Core underneath)";

} // namespace

std::vector<ExportFile> writeNemo(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const ModelShape &m = c.shape;
    const FrameworkProfile &fw = c.profile;
    const bool interleaved = p.schedule == Schedule::Interleaved && p.virtualStages > 1;
    const bool distributedAdam = u.zero >= 1;

    YAML::Emitter y;
    y << YAML::BeginMap;
    y << YAML::Key << "run" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "name" << YAML::Value << ("nest_" + c.request.model.name);
    y << YAML::EndMap;
    y << YAML::Key << "trainer" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "num_nodes" << YAML::Value << c.ranks().hosts.size();
    y << YAML::Key << "devices" << YAML::Value << c.ranks().procsPerNode;
    y << YAML::Key << "accelerator" << YAML::Value << "gpu";
    y << YAML::Key << "precision" << YAML::Value << "bf16";
    y << YAML::Key << "max_steps" << YAML::Value << 100;
    y << YAML::EndMap;

    y << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "mcore_gpt" << YAML::Value << true;
    y << YAML::Key << "micro_batch_size" << YAML::Value << p.microBatch;
    y << YAML::Key << "global_batch_size" << YAML::Value << p.globalBatch;
    y << YAML::Key << "tensor_model_parallel_size" << YAML::Value << u.tp;
    y << YAML::Key << "pipeline_model_parallel_size" << YAML::Value << u.pp;
    y << YAML::Key << "virtual_pipeline_model_parallel_size" << YAML::Value;
    if (interleaved)
        y << p.virtualStages;
    else
        y << YAML::Null;
    if (u.pipelineUnits != PipelineUnits::Layers) {
        // Megatron-Core TransformerConfig fields, which NeMo's build_transformer_config reads
        // from the model config by name: the embedding / the loss count as one layer each of
        // the even split (of every chunk's, with interleaving).
        y << YAML::Key << "account_for_embedding_in_pipeline_split" << YAML::Value
          << countsEmbedding(u.pipelineUnits);
        y << YAML::Key << "account_for_loss_in_pipeline_split" << YAML::Value << countsLoss(u.pipelineUnits);
    }
    y << YAML::Key << "context_parallel_size" << YAML::Value << u.cp;
    y << YAML::Key << "expert_model_parallel_size" << YAML::Value << u.ep;
    y << YAML::Key << "sequence_parallel" << YAML::Value << u.sp;
    y << YAML::Key << "encoder_seq_length" << YAML::Value << p.seqLength;
    y << YAML::Key << "max_position_embeddings" << YAML::Value << std::max(m.maxPositions, p.seqLength);
    y << YAML::Key << "num_layers" << YAML::Value << m.layers;
    y << YAML::Key << "hidden_size" << YAML::Value << m.hidden;
    y << YAML::Key << "ffn_hidden_size" << YAML::Value << m.ffnHidden;
    y << YAML::Key << "num_attention_heads" << YAML::Value << m.heads;
    y << YAML::Key << "num_query_groups" << YAML::Value << m.kvHeads;
    y << YAML::Key << "normalization" << YAML::Value << (m.rmsNorm ? "rmsnorm" : "layernorm");
    y << YAML::Key << "activation" << YAML::Value << (m.gatedMlp ? "fast-swiglu" : "gelu");
    y << YAML::Key << "bias" << YAML::Value << m.linearBias;
    y << YAML::Key << "position_embedding_type" << YAML::Value << (m.rotary ? "rope" : "learned_absolute");
    y << YAML::Key << "share_embeddings_and_output_weights" << YAML::Value << m.tiedEmbeddings;
    y << YAML::Key << "make_vocab_size_divisible_by" << YAML::Value << 128;
    if (m.experts > 1) {
        y << YAML::Key << "num_moe_experts" << YAML::Value << m.experts;
        y << YAML::Key << "moe_router_topk" << YAML::Value << m.topK;
    }
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
    y << YAML::Key << "ub_tp_comm_overlap" << YAML::Value << (fw.tpOverlap && u.sp);
    y << YAML::Key << "optim" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "name" << YAML::Value << (distributedAdam ? "distributed_fused_adam" : "fused_adam");
    if (distributedAdam) {
        y << YAML::Key << "overlap_grad_sync" << YAML::Value << fw.gradReduceOverlap;
        y << YAML::Key << "overlap_param_sync" << YAML::Value << fw.paramGatherOverlap;
    }
    y << YAML::Key << "lr" << YAML::Value << 1.0e-4;
    y << YAML::EndMap;
    y << YAML::EndMap;
    y << YAML::EndMap;

    const std::string &yamlName = c.mainName;
    std::string yaml = commentBlock(c.headerLines(kVersion));
    yaml += std::string(y.c_str()) + "\n";

    std::string script = "#!/usr/bin/env bash\n";
    script += commentBlock({"NeMo launch of " + yamlName + " with the planned rank placement (see its header).",
                            "Run on every host of " + c.stem + ".hostfile; NEMO_DIR points at the NeMo checkout."});
    script += "set -euo pipefail\n\n";
    script += nodeSelectionBash(c);
    script += "NEMO_DIR=${NEMO_DIR:-/opt/NeMo}\n";
    script += "CONFIG_DIR=$(cd \"$(dirname \"$0\")\" && pwd)\n";
    script += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n\n";
    script += torchrunExec("\"$NEMO_DIR/examples/nlp/language_modeling/megatron_gpt_pretraining.py\" "
                           "--config-path=\"$CONFIG_DIR\" --config-name=" + shellQuote(yamlName));

    std::vector<ExportFile> files{{yamlName, yaml, false}, {c.stem + ".sh", script, true}};
    for (ExportFile &f : rankSideFiles(c, "nemo"))
        files.push_back(std::move(f));
    return files;
}

} // namespace nest
