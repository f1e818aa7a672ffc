// The Megatron-LM writer: a bash launch script for pretrain_gpt.py (pretrain_bert.py for
// BERT) under torchrun, with the rank map and hostfile beside it. Flag names from
// Megatron-LM's megatron/training/arguments.py at NVIDIA/Megatron-LM@000c4ac2
// (docs/interop.md cites the file).
#include "FrameworkPrecision.h"
#include "LaunchContext.h"
#include "SafeText.h"

namespace nest {

namespace {

const char *kMegatronVersion =
    "Megatron-LM at NVIDIA/Megatron-LM@000c4ac24f61159c138b0975def722c65245983c "
    "(megatron/training/arguments.py, core_r0.14 era), launched with torchrun";

void flag(std::string &out, const std::string &name, const std::string &value = {})
{
    out += "  " + name + (value.empty() ? "" : " " + value) + "\n";
}

} // namespace

namespace {

// How the blocks are split over the stages, in the flags that say it.
void splitFlags(std::string &par, const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const std::vector<int> &split = c.result.runnable.stageBlocks;
    if (u.pipelineUnits != PipelineUnits::Layers) {
        // The embedding (and the loss) count as one layer each of Megatron-Core's even split
        // (RunnablePlan made every stage the same number of units); chunks per stage are
        // given as a count, since "layers per virtual stage" would not say whether they count.
        if (countsEmbedding(u.pipelineUnits))
            flag(par, "--account-for-embedding-in-pipeline-split");
        if (countsLoss(u.pipelineUnits))
            flag(par, "--account-for-loss-in-pipeline-split");
        if (p.schedule == Schedule::Interleaved && p.virtualStages > 1)
            flag(par, "--num-virtual-stages-per-pipeline-rank", std::to_string(p.virtualStages));
        return;
    }
    if (p.schedule == Schedule::Interleaved && p.virtualStages > 1) {
        flag(par, "--num-layers-per-virtual-pipeline-stage", std::to_string(split.front()));
        return;
    }
    if (split.size() <= 1 || (split.front() == split[1] && split.back() == split[1]))
        return;
    bool interiorEven = true;
    for (size_t k = 2; k + 1 < split.size(); ++k)
        interiorEven = interiorEven && split[k] == split[1];
    if (interiorEven && split.front() > 0 && split.back() > 0) {
        flag(par, "--decoder-first-pipeline-num-layers", std::to_string(split.front()));
        flag(par, "--decoder-last-pipeline-num-layers", std::to_string(split.back()));
        return;
    }
    // Any split: stage by stage, "E" the embedding, "t*n" n blocks, "L" the loss
    // (megatron/core/transformer/pipeline_parallel_layer_layout.py).
    std::string layout;
    for (size_t k = 0; k < split.size(); ++k)
        layout += std::string(k ? "|" : "") + (k == 0 ? "E" : "") +
                  (split[k] > 0 ? "t*" + std::to_string(split[k]) : std::string()) +
                  (k + 1 == split.size() ? "L" : "");
    flag(par, "--pipeline-model-parallel-layout", shellQuote(layout));
}

std::string parallelArgs(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const FrameworkProfile &fw = c.profile;
    std::string par;
    flag(par, "--tensor-model-parallel-size", std::to_string(u.tp));
    flag(par, "--pipeline-model-parallel-size", std::to_string(u.pp));
    flag(par, "--context-parallel-size", std::to_string(u.cp));
    flag(par, "--expert-model-parallel-size", std::to_string(u.ep));
    if (u.etp > 0 && u.etp != u.tp)  // absent: Megatron-Core's default, the tp
        flag(par, "--expert-tensor-parallel-size", std::to_string(u.etp));
    splitFlags(par, c);
    if (c.result.runnable.orderIndex == 1)
        flag(par, "--use-tp-pp-dp-mapping");
    if (u.sp)
        flag(par, "--sequence-parallel");
    if (u.zero >= 1)
        flag(par, "--use-distributed-optimizer");
    if (fw.gradReduceOverlap && u.dp * u.cp > 1) {
        flag(par, "--overlap-grad-reduce");
        if (fw.paramGatherOverlap && u.zero >= 1)
            flag(par, "--overlap-param-gather");
    }
    if (fw.tpOverlap && u.sp)
        flag(par, "--tp-comm-overlap");
    return par;
}

std::string megatronModelArgs(const LaunchContext &c)
{
    const Plan &p = c.result.runnable.plan;
    const ModelShape &m = c.shape;
    std::string model;
    flag(model, "--num-layers", std::to_string(m.layers));
    flag(model, "--hidden-size", std::to_string(m.hidden));
    flag(model, "--ffn-hidden-size", std::to_string(m.ffnHidden));
    flag(model, "--num-attention-heads", std::to_string(m.heads));
    if (m.kvHeads > 0 && m.kvHeads != m.heads) {
        flag(model, "--group-query-attention");
        flag(model, "--num-query-groups", std::to_string(m.kvHeads));
    }
    flag(model, "--seq-length", std::to_string(p.seqLength));
    flag(model, "--max-position-embeddings", std::to_string(std::max(m.maxPositions, p.seqLength)));
    if (m.rotary)
        flag(model, "--position-embedding-type", "rope");
    if (m.rmsNorm)
        flag(model, "--normalization", "RMSNorm");
    if (m.gatedMlp)
        flag(model, "--swiglu");
    if (!m.linearBias)
        flag(model, "--disable-bias-linear");
    if (!m.tiedEmbeddings)
        flag(model, "--untie-embeddings-and-output-weights");
    if (m.experts > 1) {
        flag(model, "--num-experts", std::to_string(m.experts));
        flag(model, "--moe-router-topk", std::to_string(m.topK));
        if (m.routerGroups > 1) {
            // The model's group-limited routing (DeepSeek-V3's node-limited top-k), which the
            // hierarchical dispatch is priced with (remoteDomainsPerToken()).
            flag(model, "--moe-router-num-groups", std::to_string(m.routerGroups));
            flag(model, "--moe-router-group-topk", std::to_string(m.routerGroupTopK));
        }
        if (c.request.cost.moeHierarchicalDispatch) {
            // The dispatch priced (--moe-dispatcher deepep, docs/cost-model.md §1c): DeepEP's
            // kernels behind Megatron-Core's flex dispatcher (DeepEP needs flex).
            flag(model, "--moe-token-dispatcher-type", "flex");
            flag(model, "--moe-enable-deepep");
        }
        // Where TransformerConfig accepts the overlap, the rule the evaluator prices it by:
        // virtual stages when pp > 1 (expertOverlapSchedule()), and no full recomputation.
        if (c.request.cost.moeA2aOverlap && expertOverlapSchedule(p.pipelineDepth(), p.schedule, p.virtualStages) &&
            c.layout().recompute != Recompute::Full) {
            // The overlap priced (--moe-a2a-overlap on, docs/cost-model.md §1c): Megatron-Core's
            // combined 1F1B with the weight-gradient GEMMs delayed to fill it, as
            // Megatron-Bridge's moe_a2a_overlap sets both.
            flag(model, "--overlap-moe-expert-parallel-comm");
            flag(model, "--delay-wgrad-compute");
        }
    }
    // Megatron pads the vocabulary to a multiple of 128 x tp (--make-vocab-size-divisible-by).
    flag(model, "--tokenizer-type", "NullTokenizer");
    flag(model, "--vocab-size", std::to_string(m.vocab));
    return model;
}

std::string trainingArgs(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    std::string train;
    flag(train, "--micro-batch-size", std::to_string(p.microBatch));
    flag(train, "--global-batch-size", std::to_string(p.globalBatch));
    if (u.recompute == Recompute::Full) {
        flag(train, "--recompute-granularity", "full");
        flag(train, "--recompute-method", "uniform");
        flag(train, "--recompute-num-layers", "1");
    } else if (u.recompute == Recompute::Selective) {
        flag(train, "--recompute-granularity", "selective");
        // What it reruns where the plan was priced with other modules than Megatron's
        // default core_attn (CostOptions::recomputeModules; names as Megatron spells them).
        if (!c.request.cost.recomputeModules.isDefault())
            flag(train, "--recompute-modules", recomputeModulesText(c.request.cost.recomputeModules, " "));
    }
    for (const std::string &f : megatronPrecisionFlags(p, c.profile.gathersLowPrecision(p.precision)))
        flag(train, f);
    // The attention in FP8 where the plan was priced so (CostOptions::fp8Attention).
    if (c.request.cost.fp8Attention && allowsFp8Attention(p.precision))
        flag(train, "--fp8-dot-product-attention");
    flag(train, "--train-iters", "\"$TRAIN_ITERS\"");
    flag(train, "--lr", "1.0e-4");
    flag(train, "--mock-data");
    return train;
}

} // namespace

std::vector<ExportFile> writeMegatron(const LaunchContext &c)
{
    const ModelShape &m = c.shape;
    std::string script = "#!/usr/bin/env bash\n";
    script += commentBlock(c.headerLines(kMegatronVersion));
    script += "#\n" + commentBlock({"Run on every host of " + c.stem + ".hostfile (for example: srun --ntasks-per-node=1 bash " +
                                     c.mainName + ", or pdsh); MEGATRON_DIR points at the checkout."});
    script += "set -euo pipefail\n\n";
    script += nodeSelectionBash(c);
    script += "MEGATRON_DIR=${MEGATRON_DIR:-/workspace/Megatron-LM}\n";
    script += "TRAIN_ITERS=${TRAIN_ITERS:-" + std::to_string(c.request.iterations) + "}\n";
    script += "# PLACEHOLDERS: --mock-data and the NullTokenizer train the planned shapes on synthetic tokens. For\n";
    script += "# real data replace them with --data-path PREFIX and --tokenizer-type HuggingFaceTokenizer\n";
    script += "# --tokenizer-model PATH (a tokenizer whose vocabulary is the planned " + std::to_string(m.vocab) + ").\n";
    script += "# Megatron asserts this with tensor or context parallelism before Blackwell.\n";
    script += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n\n";
    script += "PARALLEL_ARGS=(\n" + parallelArgs(c) + ")\n";
    script += "MODEL_ARGS=(\n" + megatronModelArgs(c) + ")\n";
    script += "TRAINING_ARGS=(\n" + trainingArgs(c) + ")\n\n";
    const std::string entry = m.family == "bert" ? "pretrain_bert.py" : "pretrain_gpt.py";
    script += torchrunExec("\"$MEGATRON_DIR/" + entry +
                           "\" \"${PARALLEL_ARGS[@]}\" \"${MODEL_ARGS[@]}\" \"${TRAINING_ARGS[@]}\"");

    std::vector<ExportFile> files{{c.mainName, script, true}};
    for (ExportFile &f : rankSideFiles(c, "megatron-lm"))
        files.push_back(std::move(f));
    return files;
}

} // namespace nest
