#include "ModelBuilder.h"

#include <algorithm>
#include <string>
#include <vector>

namespace nest {

namespace {

constexpr double ACT_BYTES = 2;     // BF16 activations
constexpr double LOGIT_BYTES = 4;   // FP32 logits for the loss (Korthikanti et al. Sec. 4.3)
constexpr double LSE_BYTES = 4;     // FP32 softmax logsumexp per row (FlashAttention)

// Sizes as doubles so that every product is exact below 2^53 and never overflows.
struct Dims {
    double s, h, a, hkv, f, v, e, k;
    bool gated, bias, rms, dropout, moe, flash, causal, rotary;
};

Dims dimsOf(const ModelConfig &m)
{
    return {static_cast<double>(m.seqLength), static_cast<double>(m.hidden),
            static_cast<double>(m.heads), static_cast<double>(m.kvHidden()),
            static_cast<double>(m.ffnHidden), static_cast<double>(m.vocab),
            static_cast<double>(m.experts), static_cast<double>(m.topK),
            m.gatedMlp, m.linearBias, m.rmsNorm, m.dropout, m.experts > 1, m.flashAttention, m.causal,
            m.family != "gpt" && m.family != "bert"};  // rotary unless learned positions
}

double normParams(const Dims &d)
{
    return d.rms ? d.h : 2 * d.h;  // RMSNorm: weight; LayerNorm: weight + bias
}

LayerProfile embeddingLayer(const ModelConfig &m, const Dims &d)
{
    LayerProfile l;
    l.name = "embedding";
    l.kind = LayerKind::Embedding;
    const bool learnedPositions = m.family == "gpt" || m.family == "bert";
    const bool bert = m.family == "bert";
    const double word = d.v * d.h;  // vocab-parallel in Megatron-LM: TP divides it
    l.params = word + (learnedPositions ? m.maxPositions * d.h : 0) + m.typeVocab * d.h +
               (bert ? normParams(d) : 0);
    l.tpParams = word;
    l.activeParams = l.params;
    // Lookups and additions only: no model FLOPs.
    l.outputBytes = ACT_BYTES * d.s * d.h;
    // Saved: the embedding dropout mask (1 byte per element, Korthikanti Sec. 4.1) and,
    // for BERT, the input of the embedding LayerNorm.
    l.stashSpBytes = (d.dropout ? d.s * d.h : 0) + (bert ? ACT_BYTES * d.s * d.h : 0);
    // Megatron recomputes transformer layers only: the embedding keeps its stash.
    l.recomputeStashBytes = l.stashSpBytes;
    // The gathered embedding rows and the summed output.
    l.workingBytes = 2 * ACT_BYTES * d.s * d.h;
    // Vocab-parallel embedding: one all-reduce of the s*h output (Megatron-LM).
    l.tpAllReduceBytes = ACT_BYTES * d.s * d.h;
    // Memory-bound: read the gathered rows, write the sum (and dropout: mask + output).
    l.elementwiseSpBytes = d.s * (2 * ACT_BYTES * d.h + (d.dropout ? (ACT_BYTES + 1) * d.h : 0));
    return l;
}

// A block's parameters: column-parallel linears (QKV, MLP up/gate) split weight and bias
// across TP; row-parallel ones (attention out, MLP down) split the weight, replicate the bias.
void blockParameters(const Dims &d, LayerProfile &l)
{
    const double h = d.h;
    const double qkv = h * (h + 2 * d.hkv) + (d.bias ? h + 2 * d.hkv : 0);
    const double out = h * h;
    const double outBias = d.bias ? h : 0;
    const double mlpMatrices = (d.gated ? 3 : 2) * h * d.f;
    const double mlpColBias = d.bias ? (d.gated ? 2 : 1) * d.f : 0;
    const double mlpRowBias = d.bias ? h : 0;
    const double norms = 2 * normParams(d);
    const double expert = mlpMatrices + mlpColBias + mlpRowBias;
    if (d.moe) {
        const double router = h * d.e;  // replicated, no bias (Mixtral)
        l.expertParams = d.e * expert;
        l.params = qkv + out + outBias + l.expertParams + router + norms;
        l.tpParams = qkv + out + d.e * (mlpMatrices + mlpColBias);
        l.activeParams = l.params - (d.e - d.k) * expert;
    } else {
        l.params = qkv + out + outBias + expert + norms;
        l.tpParams = qkv + out + mlpMatrices + mlpColBias;
        l.activeParams = l.params;
    }
}

// The core attention's forward FLOPs per sequence: QK^T and PV.
double coreAttentionFlops(double s, double h) { return 2 * (2 * s * s * h); }

// A block's model FLOPs per sequence.
void blockFlops(const Dims &d, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    // Model FLOPs, the same with flash attention: its backward also recomputes QK^T (Dao et
    // al. 2022, Alg. 4; +2s^2h per block), hardware work that MFU does not count and that we
    // leave out of the time as well (docs/cost-model.md).
    const double projections = 2 * s * h * (h + 2 * d.hkv) + 2 * s * h * h;  // Q,K,V + O
    const double attention = coreAttentionFlops(s, h);
    const double mlpPerExpert = 2 * s * h * d.f * (d.gated ? 3 : 2);
    const double mlp = d.moe ? d.k * mlpPerExpert + 2 * s * h * d.e : mlpPerExpert;
    l.fwdFlops = projections + attention + mlp;
    l.bwdFlops = 2 * l.fwdFlops;
}

// A block's executed work by operator (docs/cost-model.md, "Compute from shapes"): its GEMMs,
// the fused attention's FLOPs and the memory-bound kernels' bytes.
void blockOperators(const Dims &d, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    const double attention = coreAttentionFlops(s, h);
    using Split = GemmShape::Split;
    const double dh = d.a > 0 ? h / d.a : h;
    l.gemms.push_back({1, h + 2 * d.hkv, h, 1, Split::Column, false, false});  // QKV
    if (d.flash) {
        // One fused kernel; causal masking skips the upper triangle (Dao 2023, Sec. 3.1.1).
        l.attentionFlops = attention * (d.causal ? 0.5 : 1.0);
    } else {
        // Batched per head: scores (s x s over dh) and the weighted values (s x dh over s);
        // the masked half is computed too.
        l.gemms.push_back({1, s, dh, d.a, Split::Heads, false, true});
        l.gemms.push_back({1, dh, s, d.a, Split::Heads, false, true});
    }
    l.gemms.push_back({1, h, h, 1, Split::Row, false, false});  // attention output
    const double up = d.f * (d.gated ? 2 : 1);
    if (d.moe) {
        l.gemms.push_back({1, d.e, h, 1, Split::None, false, false});  // router
        l.gemms.push_back({d.k, up, h, d.e, Split::Column, true, false});
        l.gemms.push_back({d.k, h, d.f, d.e, Split::Row, true, false});
    } else {
        l.gemms.push_back({1, up, h, 1, Split::Column, false, false});
        l.gemms.push_back({1, h, d.f, 1, Split::Row, false, false});
    }
    // Memory-bound kernels, forward HBM bytes (read + write, BF16; 1-byte dropout masks):
    // two norms (read h, write h), two residual adds (read 2h, write h), the dropouts after
    // attention and MLP (read h, write h and the mask), MoE token permute / unpermute; split
    // by TP always: the activation (GeLU: read f, write f; SwiGLU: read 2f, write f, per
    // routed copy), rotary on Q and K, and for materialised attention the softmax (read and
    // write a*s per token) and its dropout (read, write, mask).
    l.elementwiseSpBytes = s * (2 * 2 * ACT_BYTES * h + 2 * 3 * ACT_BYTES * h +
                                (d.dropout ? 2 * (2 * ACT_BYTES + 1) * h : 0) +
                                (d.moe ? 2 * 2 * d.k * ACT_BYTES * h : 0));
    l.elementwiseTpBytes = s * ((d.moe ? d.k : 1) * ACT_BYTES * (d.gated ? 3 : 2) * d.f +
                                (d.rotary ? 2 * ACT_BYTES * (h + d.hkv) : 0) +
                                (d.flash ? 0 : 2 * ACT_BYTES * d.a * s + (d.dropout ? (2 * ACT_BYTES + 1) * d.a * s : 0)));
}

// torchtitan's op-level selective activation checkpointing (torchtitan
// parallelisms/parallelize_llama.py, `_apply_ac_to_transformer_block` with
// selective_ac_option = "op", the default of its llama3 configs): inside each block it saves
// the outputs of the ops in `_save_list` (aten.mm, the fused SDPA kernels, the TP
// reduce-scatter) "except every second mm" (a per-block counter; the 2nd, 4th, ... mm is
// recomputed), and everything else (norms, rotary, SiLU, the gate product) is recomputed
// from the block input the checkpoint wrapper keeps. The matmuls in forward order
// (torchtitan models/llama/model.py: wq, wk, wv in Attention.forward; wo; w2(silu(w1(x)) *
// w3(x)) in FeedForward.forward, so w1 runs before w3) are numbered from 1 and the odd ones
// are kept. Dense blocks with fused attention only (the save list names the SDPA kernels).
void opSelectiveStash(const Dims &d, LayerProfile &l)
{
    if (d.moe || !d.flash)
        return;
    const double s = d.s, h = d.h;
    struct Matmul { double n, k; bool sharded; };  // output width, input width per token
    std::vector<Matmul> order = {{h, h, true}, {d.hkv, h, true}, {d.hkv, h, true}, {h, h, false}, {d.f, h, true}};
    if (d.gated)
        order.push_back({d.f, h, true});  // w3
    order.push_back({h, d.f, false});     // w2 (down projection)
    double sp = ACT_BYTES * s * h;  // the block input (the checkpoint's own argument)
    // The fused attention's output and its FP32 logsumexp (the SDPA op is saved).
    double tp = ACT_BYTES * s * h + LSE_BYTES * d.a * s;
    double all = 0, rerun = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
        const Matmul &m = order[i];
        all += m.n * m.k;
        if (i % 2 == 1) {  // the 2nd, 4th, ... mm: recomputed
            rerun += m.n * m.k;
            continue;
        }
        // Column-parallel outputs are TP-sharded; a row-parallel output is a full-width partial
        // sum per device (counted with the TP-replicated part; its reduce-scatter output, also
        // saved under TP + SP, is not counted: an approximation above tp = 1).
        (m.sharded ? tp : sp) += ACT_BYTES * s * m.n;
    }
    l.opSelectiveStashSpBytes = sp;
    l.opSelectiveStashTpBytes = tp;
    l.opRecomputeGemmShare = all > 0 ? rerun / all : 0;
}

// A block's activations saved for backward (bytes per sequence).
void blockStash(const Dims &d, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    // Replicated across TP (divided only by sequence parallelism): the inputs of the two
    // norms, the inputs of the QKV and first MLP (or router) matmuls (the norm outputs), and
    // the two 1-byte dropout masks after attention and MLP: 8sh (+2sh) = Korthikanti's 10sh.
    double sp = 4 * ACT_BYTES * s * h + (d.dropout ? 2 * s * h : 0);
    // Divided by TP: Q, K, V (K and V of width hkv under GQA), the output projection's input
    // (= the attention output), then the attention's own saved tensors:
    //  - materialised attention: the softmax output (2as^2) and, with dropout, its mask
    //    (as^2) and the dropped probabilities (2as^2): GPT gives 8sh + 5as^2 as in Korthikanti;
    //  - flash attention (Dao et al. 2022, Sec. 3.1 and Alg. 2): no s x s tensor; the
    //    backward recomputes the scores from Q, K, V, the output and the softmax statistics,
    //    since FlashAttention-2 (Dao 2023, Sec. 3.1.1) one FP32 logsumexp per row and head
    //    (4as); the dropout mask is regenerated from the saved RNG state.
    // Selective recomputation (Korthikanti Sec. 5) reruns the core attention in backward and
    // drops the tensors saved inside it: the s x s ones, or with flash attention only the
    // logsumexp (its output is also the output projection's input, which stays).
    l.attentionStashBytes = d.flash ? LSE_BYTES * d.a * s
                                    : ACT_BYTES * d.a * s * s + (d.dropout ? 3 * d.a * s * s : 0);
    double tp = ACT_BYTES * s * (2 * h + 2 * d.hkv) + l.attentionStashBytes;
    // MLP: GeLU keeps its input and output (2 * 2sf = 16sh for f = 4h); SwiGLU keeps the
    // gate and up outputs and their product, the down projection's input (3 * 2sf; the
    // fused Megatron kernel recomputes silu in backward). MoE: per routed token copy.
    const double mlpStash = ACT_BYTES * s * d.f * (d.gated ? 3 : 2);
    if (d.moe) {
        tp += d.k * mlpStash;
        // Router logits (FP32), the permuted expert inputs and the expert outputs kept for
        // the weighted combine: not split by TP.
        sp += LOGIT_BYTES * s * d.e + 2 * d.k * ACT_BYTES * s * h;
    } else {
        tp += mlpStash;
    }
    l.stashSpBytes = sp;
    l.stashTpBytes = tp;
    l.recomputeStashBytes = ACT_BYTES * s * h;  // the block input
    opSelectiveStash(d, l);
    l.outputBytes = ACT_BYTES * s * h;
}

// A block's transient peak and its communication per sequence per forward.
void blockWorkingAndComm(const Dims &d, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    // Transient peak: the largest intermediate together with its gradient in backward
    // (attention scores a*s^2, the MLP's inner activation, or the QKV output). Flash
    // attention keeps its score tiles in on-chip SRAM: no s x s term; its FP32 dQ
    // accumulator (4sh) is below the QKV term's 2 x 2s(h + 2hkv).
    const double mlpInner = ACT_BYTES * s * d.f * (d.gated ? 2 : 1) * (d.moe ? d.k : 1);
    const double scores = d.flash ? 0.0 : ACT_BYTES * d.a * s * s;
    l.workingBytes = 2 * std::max({scores, mlpInner, ACT_BYTES * s * (h + 2 * d.hkv)});

    // --- communication per sequence per forward ------------------------------------------
    l.tpAllReduceBytes = 2 * ACT_BYTES * s * h;             // attention out + MLP out
    l.epAllToAllBytes = d.moe ? 2 * d.k * s * h * ACT_BYTES : 0;  // dispatch + combine
    l.cpExchangeBytes = 2 * s * d.hkv * ACT_BYTES;          // K and V around the ring
}

LayerProfile blockLayer(const Dims &d, int index)
{
    LayerProfile l;
    l.name = "block" + std::to_string(index);
    l.kind = d.moe ? LayerKind::Moe : LayerKind::Transformer;
    blockParameters(d, l);
    blockFlops(d, l);
    blockOperators(d, l);
    blockStash(d, l);
    blockWorkingAndComm(d, l);
    return l;
}

LayerProfile headLayer(const ModelConfig &m, const Dims &d)
{
    LayerProfile l;
    l.name = "head";
    l.kind = LayerKind::Head;
    const double s = d.s, h = d.h;
    const bool bert = m.family == "bert";
    const double projection = d.v * h;
    double replicated = 0, split = 0;
    if (bert) {
        // Post-LN encoder: no final norm. MLM head: dense h*h + bias, GeLU, LayerNorm,
        // decoder (tied) + vocab bias (vocab-parallel); pooler h*h + bias and the
        // next-sentence classifier 2h + 2.
        replicated = h * h + h + 2 * h + (h * h + h) + (2 * h + 2);
        split = d.v;
    } else {
        replicated = normParams(d);  // final norm
    }
    if (m.tiedEmbeddings) {
        l.tiedParams = projection;
    } else {
        split += projection;
    }
    l.params = replicated + split;
    l.tpParams = split;
    l.activeParams = l.params;

    l.fwdFlops = 2 * s * h * d.v + (bert ? 2 * s * h * h + 2 * h * h + 2 * 2 * h : 0);
    l.bwdFlops = 2 * l.fwdFlops;
    l.gemms.push_back({1, d.v, h, 1, GemmShape::Split::Column, false, false});
    if (bert)
        l.gemms.push_back({1, h, h, 1, GemmShape::Split::None, false, false});
    // The final norm (read h, write h); the vocab-parallel cross-entropy reads the BF16
    // logits twice (max, then exp-sum) and writes the FP32 softmax kept for backward.
    l.elementwiseSpBytes = s * 2 * ACT_BYTES * h;
    l.elementwiseTpBytes = s * (2 * ACT_BYTES + LOGIT_BYTES) * d.v;

    // Saved: the final norm's input and the projection's input (4sh; BERT: dense input, GeLU
    // input, LayerNorm input, decoder input = 8sh) and the FP32 logits the cross-entropy
    // keeps, vocab-parallel (Korthikanti Sec. 4.3: 4sh/t * (1 + v/h) with SP).
    l.stashSpBytes = (bert ? 4 : 2) * ACT_BYTES * s * h;
    l.stashTpBytes = LOGIT_BYTES * s * d.v;
    // With recomputation only the input stays; the logits are rebuilt in backward.
    l.recomputeStashBytes = ACT_BYTES * s * h;
    l.outputBytes = 0;  // the loss
    // The BF16 logits before the FP32 upcast (and the BF16 gradient after): Megatron's
    // vocab-parallel cross-entropy exponentiates the FP32 copy in place, keeps it, and
    // turns it into the gradient in place in backward (no second FP32 buffer).
    l.workingBytes = ACT_BYTES * s * d.v;
    // Column-parallel projection: the conjugate all-reduce of its s*h input (in backward).
    l.tpAllReduceBytes = ACT_BYTES * s * h;
    return l;
}

} // namespace

ModelProfile buildProfile(const ModelConfig &config)
{
    const Dims d = dimsOf(config);
    ModelProfile p;
    p.name = config.name;
    p.family = config.family;
    p.seqLength = config.seqLength;
    p.hidden = config.hidden;
    p.heads = config.heads;
    p.kvHeads = config.kvHeads;
    p.numExperts = config.experts;
    p.topK = config.topK;
    p.vocab = config.vocab;
    p.globalBatch = config.globalBatch;
    p.source = config.source;
    p.layers.reserve(static_cast<size_t>(std::max(0, config.layers)) + 2);
    p.layers.push_back(embeddingLayer(config, d));
    for (int i = 0; i < config.layers; ++i)
        p.layers.push_back(blockLayer(d, i));
    p.layers.push_back(headLayer(config, d));
    return p;
}

Result<ModelProfile> buildValidatedProfile(const ModelConfig &config)
{
    if (const std::string problem = validate(config); !problem.empty())
        return Result<ModelProfile>::failure("model '" + config.name + "': " + problem);
    return buildProfile(config);
}

} // namespace nest
