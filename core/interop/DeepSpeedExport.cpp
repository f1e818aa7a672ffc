// The DeepSpeed writer: the config JSON (batch split, ZeRO, bf16, pipeline activation
// checkpointing), the pipeline partition, the launcher hostfile and a launch script that
// keeps the rank placement through the launcher's --include list. Keys from DeepSpeed's
// docs/_pages/config-json.md (v0.15.0); the launcher, topology and PipelineModule rules from
// microsoft/DeepSpeed's deepspeed/launcher/runner.py, runtime/pipe/topology.py and
// runtime/pipe/module.py (docs/interop.md).
#include "FrameworkPrecision.h"
#include "LaunchContext.h"
#include "SafeText.h"

#include <algorithm>
#include <functional>

namespace nest {

namespace {

const char *kDeepSpeedVersion =
    "DeepSpeed v0.15 (docs/_pages/config-json.md; deepspeed/runtime/pipe/module.py, topology.py and "
    "launcher/runner.py at microsoft/DeepSpeed@00f47f03, @2eafdd39, @048b0d50), with Megatron-DeepSpeed's "
    "--tensor-model-parallel-size / --pipeline-model-parallel-size";

} // namespace

namespace {

// The DeepSpeed configuration JSON, the header lines as its _comment.
Json deepSpeedConfig(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const DeepSpeedPrecision precision = deepSpeedPrecision(p);
    Json config = {
        {"train_batch_size", p.globalBatch},
        {"train_micro_batch_size_per_gpu", p.microBatch},
        {"gradient_accumulation_steps", p.numMicroBatches()},
        {"zero_optimization", {{"stage", u.zero}, {"overlap_comm", c.profile.gradReduceOverlap}}},
        {"gradient_clipping", 1.0},
        {"steps_per_print", 10},
        {"pipeline", {{"activation_checkpoint_interval", u.recompute == Recompute::Full ? 1 : 0}}},
    };
    for (auto it = precision.config.begin(); it != precision.config.end(); ++it)
        config[it.key()] = it.value();
    Json comment = Json::array();
    for (const std::string &l : c.headerLines(kDeepSpeedVersion))
        comment.push_back(l);
    config["_comment"] = comment;
    return config;
}

// The script's head: where it runs, the launcher's hosts, the data and tokenizer placeholders.
std::string launchPreamble(const LaunchContext &c)
{
    const RankMapping &ranks = c.ranks();
    const ModelShape &m = c.shape;
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
    script += "TRAIN_ITERS=${TRAIN_ITERS:-" + std::to_string(c.request.iterations) + "}\n";
    script += "# PLACEHOLDER (fill in): the Megatron-format training data; NEST knows the model, not the data.\n";
    script += "DATA_PATH=${DATA_PATH:-PLACEHOLDER_data_prefix}\n";
    script += "# PLACEHOLDER (fill in): the tokenizer. NullTokenizer trains the planned vocabulary of " +
              std::to_string(m.vocab) + " ids;\n";
    script += "# for text give e.g. TOKENIZER_ARGS=\"--tokenizer-type HFTokenizer --tokenizer-model PATH\".\n";
    script += "read -r -a TOKENIZER_ARGS <<< \"${TOKENIZER_ARGS:---tokenizer-type NullTokenizer --vocab-size " +
              std::to_string(m.vocab) + "}\"\n\n";
    return script;
}

// The model's shape as Megatron-DeepSpeed's arguments.
std::string deepSpeedModelArgs(const LaunchContext &c)
{
    const Plan &p = c.result.runnable.plan;
    const ModelShape &m = c.shape;
    std::string script;
    script += "  --num-layers " + std::to_string(m.layers) + "\n";
    script += "  --hidden-size " + std::to_string(m.hidden) + "\n";
    script += "  --ffn-hidden-size " + std::to_string(m.ffnHidden) + "\n";
    script += "  --num-attention-heads " + std::to_string(m.heads) + "\n";
    if (m.kvHeads > 0 && m.kvHeads != m.heads)
        script += "  --num-key-value-heads " + std::to_string(m.kvHeads) + "\n";
    script += "  --seq-length " + std::to_string(p.seqLength) + "\n";
    script += "  --max-position-embeddings " + std::to_string(std::max(m.maxPositions, p.seqLength)) + "\n";
    if (m.rotary)
        script += "  --use-rotary-position-embeddings\n  --no-position-embedding\n";
    if (m.rmsNorm)
        script += "  --normalization rmsnorm\n";
    if (m.gatedMlp)
        script += "  --swiglu\n";
    if (!m.linearBias)
        script += "  --disable-bias-linear\n";
    if (!m.tiedEmbeddings)
        script += "  --untie-embeddings-and-output-weights\n";
    if (m.experts > 1) {
        // DeepSpeed MoE in every block (--expert-interval 1; its default 2 would halve them).
        script += "  --num-experts " + std::to_string(m.experts) + "\n";
        script += "  --topk " + std::to_string(m.topK) + "\n";
        script += "  --expert-interval 1\n";
    }
    return script;
}

std::string launchScript(const LaunchContext &c)
{
    const UniformLayout &u = c.layout();
    const Plan &p = c.result.runnable.plan;
    const bool bert = c.shape.family == "bert";
    std::string script = launchPreamble(c);
    script += "ARGS=(\n";
    script += "  --tensor-model-parallel-size " + std::to_string(u.tp) + "\n";
    script += "  --pipeline-model-parallel-size " + std::to_string(u.pp) + "\n";
    // BertModel is no PipelineModule (FrameworkModels: pp 1); a GPT at pp 1 with ZeRO-2/3 must be
    // built without the PipelineEngine too, which refuses them ("ZeRO-2 and ZeRO-3 are
    // incompatible with pipeline parallelism"; Megatron-DeepSpeed builds GPTModelPipe unless
    // --no-pipeline-parallel).
    if (bert || (u.pp == 1 && u.zero >= 2))
        script += "  --no-pipeline-parallel\n";
    if (u.sp)
        script += "  --sequence-parallel\n";
    script += deepSpeedModelArgs(c);
    script += "  --micro-batch-size " + std::to_string(p.microBatch) + "\n";
    script += "  --global-batch-size " + std::to_string(p.globalBatch) + "\n";
    script += "  --train-iters \"$TRAIN_ITERS\"\n";
    script += "  --lr 1.0e-4\n";
    script += "  --data-path \"$DATA_PATH\"\n";
    script += "  --split 969,30,1\n";
    if (u.recompute != Recompute::None)
        script += std::string("  --recompute-granularity ") + (u.recompute == Recompute::Full ? "full" : "selective") + "\n";
    for (const std::string &f : deepSpeedPrecision(p).flags)
        script += "  " + f + "\n";
    script += "  --deepspeed\n";
    script += "  --deepspeed_config \"$HERE\"/" + shellQuote(c.mainName) + "\n";
    script += ")\n\n";
    script += "exec deepspeed --hostfile \"$HERE\"/" + shellQuote(c.stem + ".hostfile") + " --include \"$INCLUDE\" \\\n";
    script += "  --master_addr \"$MASTER_ADDR\" --master_port \"${MASTER_PORT:-29500}\" \\\n";
    script += std::string("  \"$MEGATRON_DS_DIR/") + (bert ? "pretrain_bert.py" : "pretrain_gpt.py") +
              "\" \"${ARGS[@]}\" \"${TOKENIZER_ARGS[@]}\" \"$@\"\n";
    return script;
}

} // namespace

std::vector<ExportFile> writeDeepSpeed(const LaunchContext &c)
{
    // Megatron-DeepSpeed's GPTModelPipe hard-codes partition_method='type:transformer', so DeepSpeed
    // splits the blocks by partition_balanced (RunnablePlan made the plan's split that one).
    const Json partition = {
        {"partition_method", "type:transformer"},
        {"num_stages", c.layout().pp},
        {"blocks_per_stage", c.result.runnable.stageBlocks},
        {"note", "what DeepSpeed builds: Megatron-DeepSpeed's GPTModelPipe passes partition_method='type:transformer' "
                 "to PipelineModule, whose partition_balanced gives these blocks per stage; NEST planned this split"},
    };
    // Names are text the user chose (a file name need not be UTF-8): invalid bytes become
    // U+FFFD instead of an exception.
    const auto replace = Json::error_handler_t::replace;
    std::vector<ExportFile> files{{c.mainName, deepSpeedConfig(c).dump(2, ' ', false, replace) + "\n", false},
                                  {c.stem + ".pipeline.json", partition.dump(2, ' ', false, replace) + "\n", false},
                                  {c.stem + ".sh", launchScript(c), true}};
    for (ExportFile &f : rankSideFiles(c, "deepspeed"))
        files.push_back(std::move(f));
    return files;
}

} // namespace nest
