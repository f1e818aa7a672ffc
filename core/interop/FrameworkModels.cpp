#include "FrameworkModels.h"

#include <vector>

namespace nest {

namespace {

// torchtitan/models/llama3/__init__.py llama3_configs at 6404b932; the FFN width is
// TransformerModelArgs' rule (model/model.py FeedForward): h = int(2 * 4 * dim / 3), then
// int(ffn_dim_multiplier * h), rounded up to multiple_of. 8B: 16384 -> 10922 -> 14198 -> 14336
// (multiple_of 1024); 70B: 32768 -> 21845 -> 28398 -> 28672 (4096); 405B: 65536 -> 43690 ->
// 52428 -> 53248 (4096). vocab_size defaults to 128256 (model/args.py).
const std::vector<TorchtitanFlavor> &torchtitanFlavors()
{
    static const std::vector<TorchtitanFlavor> all{
        {"llama3", "8B", 32, 4096, 32, 8, 14336, 128256},
        {"llama3", "70B", 80, 8192, 64, 8, 28672, 128256},
        {"llama3", "405B", 126, 16384, 128, 8, 53248, 128256},
    };
    return all;
}

std::string describe(const ModelShape &m)
{
    return std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ", " + std::to_string(m.heads) +
           " heads (" + std::to_string(m.kvHeads) + " KV), FFN " + std::to_string(m.ffnHidden) + ", vocabulary " +
           std::to_string(m.vocab) + (m.experts > 1 ? ", " + std::to_string(m.experts) + " experts" : "");
}

} // namespace

std::optional<TorchtitanFlavor> torchtitanFlavor(const ModelShape &m)
{
    if (!m.guessed.empty() || m.experts > 1 || !m.gatedMlp || !m.rmsNorm || !m.rotary || m.linearBias ||
        m.tiedEmbeddings)
        return std::nullopt;
    for (const TorchtitanFlavor &f : torchtitanFlavors())
        if (f.layers == m.layers && f.hidden == m.hidden && f.heads == m.heads && f.kvHeads == m.kvHeads &&
            f.ffnHidden == m.ffnHidden && f.vocab == m.vocab)
            return f;
    return std::nullopt;
}

std::string frameworkModelProblem(ExportFormat format, const ModelShape &m, int pipelineStages)
{
    switch (format) {
    case ExportFormat::Torchtitan:
        if (torchtitanFlavor(m))
            return {};
        return "torchtitan@6404b932 builds only the models of its registry (llama3 flavors 8B, 70B and 405B; "
               "deepseek_v3), and the planned model (" + describe(m) + (m.family.empty() ? "" : ", family " + m.family) +
               ") is none of them: torchtitan would train a different model";
    case ExportFormat::Nemo:
        if (m.family == "bert")
            return "the NeMo export writes megatron_gpt_pretraining.py's GPT configuration, which builds no BERT "
                   "(NeMo's BERT entry point megatron_bert_pretraining.py takes another configuration)";
        return {};
    case ExportFormat::DeepSpeed:
        if (m.family == "bert" && pipelineStages > 1)
            return "Megatron-DeepSpeed's pretrain_bert.py builds BertModel, not a DeepSpeed PipelineModule: BERT runs "
                   "there without pipeline parallelism (pp 1), and this plan has " + std::to_string(pipelineStages) +
                   " stages";
        return {};
    case ExportFormat::Megatron:
    case ExportFormat::Nest:
        return {};
    }
    return {};
}

} // namespace nest
