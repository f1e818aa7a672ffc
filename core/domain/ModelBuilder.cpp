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
// Model-wide sizes; a block's own kind is a Block (below).
struct Dims {
    double s, h, a, hkv, f, v, e, k;
    bool gated, bias, rms, dropout, moe, flash, causal, rotary;
    // issue 45: today's layer kinds
    double qW = 0, dh = 0;          // Q (and attention output) width, head width
    double fe = 0, shared = 0;      // routed experts' width; all shared experts' width (S * F_s)
    bool attnBias = false, qkvBias = false, mlpBias = false, qkNorm = false, sinks = false;
    bool routerBias = false, sharedGate = false;
    ModelConfig::NormPlacement norms = ModelConfig::NormPlacement::Pre;
    double qLora = 0, kvLora = 0, rope = 0, nope = 0, vh = 0;               // MLA
    double mHeads = 0, mHeadDim = 0, state = 0, groups = 1, conv = 4, chunk = 256;  // Mamba-2
    bool mambaBias = false, convBias = true;
};

Dims dimsOf(const ModelConfig &m)
{
    Dims d{static_cast<double>(m.seqLength), static_cast<double>(m.hidden),
           static_cast<double>(m.heads), static_cast<double>(m.kvHidden()),
           static_cast<double>(m.ffnHidden), static_cast<double>(m.vocab),
           static_cast<double>(m.experts), static_cast<double>(m.topK),
           m.gatedMlp, m.linearBias(), m.rmsNorm, m.dropout, m.experts > 1, m.flashAttention, m.causal,
           m.family != "gpt" && m.family != "bert"};  // rotary unless learned positions
    d.qW = static_cast<double>(m.qHidden());
    d.dh = static_cast<double>(m.headDim());
    d.fe = static_cast<double>(m.routedFfn());
    d.shared = static_cast<double>(m.sharedExperts) * m.sharedFfn();
    d.attnBias = m.attentionBias;
    d.qkvBias = m.attentionBias || m.qkvBias;
    d.mlpBias = m.mlpBias;
    d.qkNorm = m.qkNorm;
    d.sinks = m.attentionSinks;
    d.routerBias = m.routerBias;
    d.sharedGate = m.sharedExpertGate && m.sharedExperts > 0;
    d.norms = m.normPlacement;
    d.qLora = m.qLoraRank;
    d.kvLora = m.kvLoraRank;
    d.rope = m.qkRopeHeadDim;
    d.nope = m.qkNopeHeadDim;
    d.vh = m.vHeadDim;
    d.mHeads = m.mambaHeads;
    d.mHeadDim = m.mambaHeadDim;
    d.state = m.ssmState;
    d.groups = m.mambaGroups;
    d.conv = m.convKernel;
    d.chunk = m.mambaChunk;
    d.mambaBias = m.mambaBias;
    d.convBias = m.mambaConvBias;
    return d;
}

// One block's kind: its mixer, attention and MLP, with the window and dense width resolved.
struct Block {
    bool attention = true, mamba = false;
    AttentionKind att = AttentionKind::Full;
    bool dense = true, moe = false;
    double f = 0;       // dense MLP width
    double window = 0;  // sliding: keys per query (at most s)
    std::string label;
    // Sublayers (mixer, MLP) present: what the norms, residuals and TP all-reduces count.
    int sublayers() const { return (attention || mamba ? 1 : 0) + (dense || moe ? 1 : 0); }
    bool mla() const { return attention && att == AttentionKind::Mla; }
    bool sliding() const { return attention && att == AttentionKind::Sliding; }
};

Block blockOf(const Dims &d, const LayerKindSpec &k)
{
    Block b;
    b.attention = k.mixer == MixerKind::Attention;
    b.mamba = k.mixer == MixerKind::Mamba;
    b.att = k.attention;
    b.dense = k.mlp == MlpKind::Dense;
    b.moe = k.mlp == MlpKind::Moe;
    b.f = k.ffnHidden > 0 ? static_cast<double>(k.ffnHidden) : d.f;
    b.window = std::min(static_cast<double>(k.window), d.s);
    b.label = k.name;
    return b;
}

// Mamba-2's widths (Dao & Gu 2024, Sec. 7; transformers' Mamba2Mixer): the inner width,
// the causal conv's channels (x, B, C) and in_proj's output (z, x, B, C, dt).
struct MambaWidths {
    double inner, conv, in;
};
MambaWidths mambaWidths(const Dims &d)
{
    const double inner = d.mHeads * d.mHeadDim;
    const double conv = inner + 2 * d.groups * d.state;
    return {inner, conv, inner + conv + d.mHeads};
}

double normParams(const Dims &d)
{
    return d.rms ? d.h : 2 * d.h;  // RMSNorm: weight; LayerNorm: weight + bias
}

// Norms of a block: one before each sublayer (pre-LN), one shared by both (parallel
// attention and MLP), or one before and one after each (sandwich).
double blockNorms(const Dims &d, const Block &b)
{
    switch (d.norms) {
    case ModelConfig::NormPlacement::Parallel: return 1;
    case ModelConfig::NormPlacement::Sandwich: return 2.0 * b.sublayers();
    case ModelConfig::NormPlacement::Pre: break;
    }
    return b.sublayers();
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

// MLA's parameters (DeepSeek-V2, Sec. 2.1.2; transformers' DeepseekV3Attention): Q through a
// low-rank down projection and its norm (or directly), K and V from one compressed latent
// plus a shared rotary key, then the output. Megatron-Core keeps the down projections whole
// on every TP rank and splits the up projections and the output.
void mlaParameters(const Dims &d, double &all, double &split)
{
    const double h = d.h, qk = d.nope + d.rope;
    const double qDown = d.qLora > 0 ? h * d.qLora + d.qLora : 0;  // q_a_proj + q_a_layernorm
    const double qUp = (d.qLora > 0 ? d.qLora : h) * d.a * qk;      // q_b_proj (or q_proj)
    const double kvDown = h * (d.kvLora + d.rope) + d.kvLora;        // kv_a_proj_with_mqa + norm
    const double kvUp = d.kvLora * d.a * (d.nope + d.vh);            // kv_b_proj
    const double out = d.a * d.vh * h + (d.attnBias ? h : 0);
    all = qDown + qUp + kvDown + kvUp + out;
    split = qUp + kvUp + d.a * d.vh * h;
}

// Mamba-2's parameters (transformers' Mamba2Mixer / NemotronHMamba2Mixer): in_proj, the
// depthwise conv (and its bias), dt_bias, A_log and D per head, the gated RMSNorm and out_proj.
// Megatron-Core's MambaMixer splits all of them across TP by heads but out_proj's bias.
void mambaParameters(const Dims &d, double &all, double &split)
{
    const MambaWidths w = mambaWidths(d);
    const double in = d.h * w.in + (d.mambaBias ? w.in : 0);
    const double conv = w.conv * d.conv + (d.convBias ? w.conv : 0);
    const double heads = 3 * d.mHeads;
    const double out = w.inner * d.h;
    all = in + conv + heads + w.inner + out + (d.mambaBias ? d.h : 0);
    split = in + conv + heads + w.inner + out;
}

// A block's parameters: column-parallel linears (QKV, MLP up/gate) split weight and bias
// across TP; row-parallel ones (attention out, MLP down) split the weight, replicate the bias.
void blockParameters(const Dims &d, const Block &b, LayerProfile &l)
{
    const double h = d.h;
    double mixer = 0, mixerTp = 0;
    if (b.mla()) {
        mlaParameters(d, mixer, mixerTp);
    } else if (b.attention) {
        const double qkvW = d.qW + 2 * d.hkv;
        const double qkv = h * qkvW + (d.qkvBias ? qkvW : 0);
        const double out = d.qW * h;
        const double outBias = d.attnBias ? h : 0;
        const double sinks = d.sinks ? d.a : 0;  // one logit per head, split with the heads
        mixer = qkv + out + outBias + sinks + (d.qkNorm ? 2 * d.dh : 0);
        mixerTp = qkv + out + sinks;
    } else if (b.mamba) {
        mambaParameters(d, mixer, mixerTp);
    }
    const auto mlpMatrices = [&](double f) { return (d.gated ? 3 : 2) * h * f; };
    const auto mlpColBias = [&](double f) { return d.mlpBias ? (d.gated ? 2 : 1) * f : 0; };
    const double mlpRowBias = d.mlpBias ? h : 0;
    const double norms = blockNorms(d, b) * normParams(d);
    if (b.moe) {
        const double expert = mlpMatrices(d.fe) + mlpColBias(d.fe) + mlpRowBias;
        const double router = h * d.e + (d.routerBias ? d.e : 0);  // replicated
        const double shared = d.shared > 0 ? mlpMatrices(d.shared) + mlpColBias(d.shared) + mlpRowBias : 0;
        const double sharedGate = d.sharedGate ? h : 0;
        l.expertParams = d.e * expert;
        l.params = mixer + l.expertParams + router + shared + sharedGate + norms;
        l.tpParams = mixerTp + d.e * (mlpMatrices(d.fe) + mlpColBias(d.fe)) +
                     (d.shared > 0 ? mlpMatrices(d.shared) + mlpColBias(d.shared) : 0);
        l.activeParams = l.params - (d.e - d.k) * expert;
    } else if (b.dense) {
        const double expert = mlpMatrices(b.f) + mlpColBias(b.f) + mlpRowBias;
        l.params = mixer + expert + norms;
        l.tpParams = mixerTp + mlpMatrices(b.f) + mlpColBias(b.f);
        l.activeParams = l.params;
    } else {
        l.params = mixer + norms;
        l.tpParams = mixerTp;
        l.activeParams = l.params;
    }
}

// Queries times the keys each sees, the s^2 of the attention's FLOPs: s * min(W, s) for a
// sliding window, s^2 for full attention. `executed`: what causal kernels compute (the keys at
// or before each query: s^2/2, or s*W - W^2/2 for a window W < s).
double keyPairs(const Dims &d, const Block &b, bool executed)
{
    const double s = d.s;
    if (!b.sliding() || b.window >= s)
        return executed && d.causal ? s * s / 2 : s * s;
    const double w = b.window;
    return executed && d.causal ? s * w - w * w / 2 : s * w;
}

// The SSD scan's FLOPs per token per head (Dao & Gu 2024, Sec. 6, chunk length Q, state N,
// head width P): the intra-chunk C B^T and its product with X (2Q(N + P)), the chunk states
// and their output (4NP); plus the depthwise conv (2 x kernel per channel).
double mambaScanFlops(const Dims &d)
{
    const MambaWidths w = mambaWidths(d);
    const double perHead = 2 * d.chunk * (d.state + d.mHeadDim) + 4 * d.state * d.mHeadDim;
    return d.s * (d.mHeads * perHead + 2 * d.conv * w.conv);
}

// A block's model FLOPs per sequence.
void blockFlops(const Dims &d, const Block &b, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    // Model FLOPs, the same with flash attention: its backward also recomputes QK^T (Dao et
    // al. 2022, Alg. 4; +2s^2h per block), hardware work that MFU does not count and that we
    // leave out of the time as well (docs/cost-model.md).
    double projections = 0, attention = 0;
    if (b.mla()) {
        const double qk = d.nope + d.rope;
        projections = 2 * s * (d.qLora > 0 ? h * d.qLora + d.qLora * d.a * qk : h * d.a * qk) +
                      2 * s * h * (d.kvLora + d.rope) + 2 * s * d.kvLora * d.a * (d.nope + d.vh) +
                      2 * s * d.a * d.vh * h;
        attention = 2 * keyPairs(d, b, false) * d.a * (qk + d.vh);
    } else if (b.attention) {
        projections = 2 * s * h * (d.qW + 2 * d.hkv) + 2 * s * d.qW * h;  // Q,K,V + O
        attention = 2 * (2 * keyPairs(d, b, false) * d.qW);                // QK^T and PV
    } else if (b.mamba) {
        const MambaWidths w = mambaWidths(d);
        projections = 2 * s * h * w.in + 2 * s * w.inner * h;
        attention = mambaScanFlops(d);
    }
    const auto perExpert = [&](double f) { return 2 * s * h * f * (d.gated ? 3 : 2); };
    const double mlp = b.moe ? d.k * perExpert(d.fe) + (d.shared > 0 ? perExpert(d.shared) : 0) + 2 * s * h * d.e
                     : b.dense ? perExpert(b.f)
                               : 0;
    l.fwdFlops = projections + attention + mlp;
    l.bwdFlops = 2 * l.fwdFlops;
}

// The fused attention's executed FLOPs (causal masking skips the upper triangle, Dao 2023,
// Sec. 3.1.1) and, without fusion, the batched per-head GEMMs (scores and weighted values,
// the masked half computed too).
void attentionOperators(const Dims &d, const Block &b, LayerProfile &l)
{
    using Split = GemmShape::Split;
    const double s = d.s;
    if (b.mla()) {
        const double qk = d.nope + d.rope;
        l.attentionFlops = 2 * keyPairs(d, b, true) * d.a * (qk + d.vh);
        if (!d.flash) {
            l.attentionFlops = 0;
            l.gemms.push_back({1, s, qk, d.a, Split::Heads, false, true});
            l.gemms.push_back({1, d.vh, s, d.a, Split::Heads, false, true});
        }
        return;
    }
    if (d.flash) {
        const double attention = 2 * (2 * keyPairs(d, b, false) * d.qW);
        l.attentionFlops = b.sliding() ? 2 * (2 * keyPairs(d, b, true) * d.qW) : attention * (d.causal ? 0.5 : 1.0);
    } else {
        l.gemms.push_back({1, s, d.dh, d.a, Split::Heads, false, true});
        l.gemms.push_back({1, d.dh, s, d.a, Split::Heads, false, true});
    }
}

// A block's executed work by operator (docs/cost-model.md, "Compute from shapes"): its GEMMs,
// the fused attention's FLOPs and the memory-bound kernels' bytes.
void blockOperators(const Dims &d, const Block &b, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    using Split = GemmShape::Split;
    double rotary = 0, mixerElementwise = 0;
    if (b.mla()) {
        const double qk = d.nope + d.rope;
        if (d.qLora > 0) {
            l.gemms.push_back({1, d.qLora, h, 1, Split::None, false, false});           // q_a_proj
            l.gemms.push_back({1, d.a * qk, d.qLora, 1, Split::Column, false, false, false, false, true});  // q_b_proj
        } else {
            l.gemms.push_back({1, d.a * qk, h, 1, Split::Column, false, false, false, false, true});  // q_proj
        }
        l.gemms.push_back({1, d.kvLora + d.rope, h, 1, Split::None, false, false});          // kv_a_proj
        l.gemms.push_back({1, d.a * (d.nope + d.vh), d.kvLora, 1, Split::Column, false, false, false, false,
                           true});  // kv_b
        attentionOperators(d, b, l);
        l.gemms.push_back({1, h, d.a * d.vh, 1, Split::Row, false, false});  // output
        rotary = 2 * ACT_BYTES * (d.a * d.rope + d.rope);
    } else if (b.attention) {
        l.gemms.push_back({1, d.qW + 2 * d.hkv, h, 1, Split::Column, false, false});  // QKV
        attentionOperators(d, b, l);
        l.gemms.push_back({1, h, d.qW, 1, Split::Row, false, false});  // attention output
        rotary = d.rotary ? 2 * ACT_BYTES * (d.qW + d.hkv) : 0;
        if (d.qkNorm)
            mixerElementwise = 2 * ACT_BYTES * (d.qW + d.hkv);
    } else if (b.mamba) {
        const MambaWidths w = mambaWidths(d);
        l.gemms.push_back({1, w.in, h, 1, Split::Column, false, false});     // in_proj
        l.attentionFlops = mambaScanFlops(d);                                 // conv + SSD scan
        l.gemms.push_back({1, h, w.inner, 1, Split::Row, false, false});     // out_proj
        // The conv (read, write its channels), the gate and the gated norm (read 2, write 1).
        mixerElementwise = ACT_BYTES * (2 * w.conv + 3 * w.inner);
    }
    const auto up = [&](double f) { return f * (d.gated ? 2 : 1); };
    if (b.moe) {
        l.gemms.push_back({1, d.e, h, 1, Split::None, false, false, true});  // router
        l.gemms.push_back({d.k, up(d.fe), h, d.e, Split::Column, true, false});
        l.gemms.push_back({d.k, h, d.fe, d.e, Split::Row, true, false});
        if (d.shared > 0) {
            l.gemms.push_back({1, up(d.shared), h, 1, Split::Column, false, false, false, true});
            l.gemms.push_back({1, h, d.shared, 1, Split::Row, false, false, false, true});
        }
    } else if (b.dense) {
        l.gemms.push_back({1, up(b.f), h, 1, Split::Column, false, false});
        l.gemms.push_back({1, h, b.f, 1, Split::Row, false, false});
    }
    // Memory-bound kernels, forward HBM bytes (read + write, BF16; 1-byte dropout masks):
    // the norms (read h, write h), a residual add per sublayer (read 2h, write h), the
    // dropouts after each sublayer (read h, write h and the mask), MoE token permute /
    // unpermute; split by TP always: the activation (GeLU: read f, write f; SwiGLU: read 2f,
    // write f, per routed copy), rotary on Q and K, the Mamba conv and gate, and for
    // materialised attention the softmax (read and write a*s per token) and its dropout.
    const double norms = blockNorms(d, b);
    const double sub = b.sublayers();
    l.elementwiseSpBytes = s * (norms * 2 * ACT_BYTES * h + sub * 3 * ACT_BYTES * h +
                                (d.dropout ? sub * (2 * ACT_BYTES + 1) * h : 0) +
                                (b.moe ? 2 * 2 * d.k * ACT_BYTES * h : 0));
    const double activation = b.moe ? d.k * ACT_BYTES * (d.gated ? 3 : 2) * d.fe +
                                          (d.shared > 0 ? ACT_BYTES * (d.gated ? 3 : 2) * d.shared : 0)
                             : b.dense ? ACT_BYTES * (d.gated ? 3 : 2) * b.f
                                       : 0;
    const bool materialised = b.attention && !d.flash;
    l.elementwiseTpBytes = s * (activation + rotary + mixerElementwise +
                                (materialised ? 2 * ACT_BYTES * d.a * s + (d.dropout ? (2 * ACT_BYTES + 1) * d.a * s : 0) : 0));
    l.rmsNormSpBytes = d.rms ? s * norms * 2 * ACT_BYTES * h : 0;
    l.rotaryTpBytes = s * rotary;
    l.normSpBytes = s * norms * 2 * ACT_BYTES * h;
    l.expertActivationTpBytes = b.moe ? s * d.k * ACT_BYTES * (d.gated ? 3 : 2) * d.fe : 0;
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
// are kept. Dense blocks with fused full attention of width h only (the save list names the
// SDPA kernels; torchtitan's llama blocks).
void opSelectiveStash(const Dims &d, const Block &b, LayerProfile &l)
{
    if (!b.dense || !d.flash || !b.attention || b.att != AttentionKind::Full || d.qW != d.h)
        return;
    const double s = d.s, h = d.h;
    struct Matmul { double n, k; bool sharded; };  // output width, input width per token
    std::vector<Matmul> order = {{h, h, true}, {d.hkv, h, true}, {d.hkv, h, true}, {h, h, false}, {b.f, h, true}};
    if (d.gated)
        order.push_back({b.f, h, true});  // w3
    order.push_back({h, b.f, false});     // w2 (down projection)
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
void blockStash(const Dims &d, const Block &b, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    const double sub = b.sublayers();
    // Replicated across TP (divided only by sequence parallelism): per sublayer the norm's
    // input and the first linear's input (the norm output) and the 1-byte dropout mask after
    // it: 8sh (+2sh) for attention + MLP = Korthikanti's 10sh. A parallel block's two
    // sublayers read one norm; a sandwich block also keeps each post-norm's input.
    const double normed = d.norms == ModelConfig::NormPlacement::Parallel ? 2.0 : d.norms == ModelConfig::NormPlacement::Sandwich ? 3 * sub : 2 * sub;
    double sp = normed * ACT_BYTES * s * h + (d.dropout ? sub * s * h : 0);
    // The norm outputs a linear layer reads: one per sublayer (one shared by a parallel block).
    double linearSp = (d.norms == ModelConfig::NormPlacement::Parallel ? 1.0 : sub) * ACT_BYTES * s * h;
    l.normOutputStashSpBytes = linearSp;
    double linearTp = 0;
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
    double tp = 0;
    if (b.attention) {
        l.attentionStashBytes = d.flash ? LSE_BYTES * d.a * s
                                        : ACT_BYTES * d.a * s * s + (d.dropout ? 3 * d.a * s * s : 0);
        if (b.mla()) {
            // Q and K of width nope + rope per head, V and the output of width v per head;
            // replicated: the down projections' outputs and their norms' outputs.
            l.attentionQkvoStashBytes = ACT_BYTES * s * d.a * (2 * (d.nope + d.rope) + 2 * d.vh);
            tp = l.attentionQkvoStashBytes + l.attentionStashBytes;
            sp += ACT_BYTES * s * (2 * d.qLora + 2 * d.kvLora + d.rope);
            linearSp += ACT_BYTES * s * (d.qLora + d.kvLora);  // the up projections' inputs
            l.attentionOutputStashBytes = ACT_BYTES * s * d.a * d.vh;
            l.mlaUpStashTpBytes = l.attentionQkvoStashBytes - l.attentionOutputStashBytes;  // Q, K, V
        } else {
            l.attentionQkvoStashBytes = ACT_BYTES * s * (2 * d.qW + 2 * d.hkv);
            tp = l.attentionQkvoStashBytes + l.attentionStashBytes;
            l.attentionOutputStashBytes = ACT_BYTES * s * d.qW;
            if (d.qkNorm)
                tp += ACT_BYTES * s * (d.qW + d.hkv);  // the Q and K norms' inputs
        }
    } else if (b.mamba) {
        // in_proj's output, the conv's output, the scan's output and the gated norm's output.
        const MambaWidths w = mambaWidths(d);
        tp = ACT_BYTES * s * (w.in + w.conv + 2 * w.inner);
        linearTp += ACT_BYTES * s * w.inner;  // out_proj's input
    }
    // MLP: GeLU keeps its input and output (2 * 2sf = 16sh for f = 4h); SwiGLU keeps the
    // gate and up outputs and their product, the down projection's input (3 * 2sf; the
    // fused Megatron kernel recomputes silu in backward). MoE: per routed token copy, and the
    // shared experts as one MLP of their summed width.
    const auto mlpStash = [&](double f) { return ACT_BYTES * s * f * (d.gated ? 3 : 2); };
    if (b.moe) {
        tp += d.k * mlpStash(d.fe) + (d.shared > 0 ? mlpStash(d.shared) : 0);
        // Router logits (FP32), the permuted expert inputs and the expert outputs kept for
        // the weighted combine: not split by TP.
        sp += LOGIT_BYTES * s * d.e + 2 * d.k * ACT_BYTES * s * h;
        l.moeCombineStashBytes = d.k * ACT_BYTES * s * h;
        linearSp += d.k * ACT_BYTES * s * h;  // the experts' inputs
        linearTp += ACT_BYTES * s * (d.k * d.fe + d.shared);  // the down projections' inputs
        l.expertActivationStashTpBytes = ACT_BYTES * s * d.k * d.fe;  // the routed ones'
    } else if (b.dense) {
        tp += mlpStash(b.f);
        linearTp += ACT_BYTES * s * b.f;
    }
    l.linearInputStashTpBytes = linearTp;
    l.linearInputStashSpBytes = linearSp;
    l.stashSpBytes = sp;
    l.stashTpBytes = tp;
    l.recomputeStashBytes = ACT_BYTES * s * h;  // the block input
    opSelectiveStash(d, b, l);
    l.outputBytes = ACT_BYTES * s * h;
}

// A block's transient peak and its communication per sequence per forward.
void blockWorkingAndComm(const Dims &d, const Block &b, LayerProfile &l)
{
    const double s = d.s, h = d.h;
    // Transient peak: the largest intermediate together with its gradient in backward
    // (attention scores a*s^2, the MLP's inner activation, or the QKV output). Flash
    // attention keeps its score tiles in on-chip SRAM: no s x s term; its FP32 dQ
    // accumulator (4sh) is below the QKV term's 2 x 2s(h + 2hkv).
    const double mlpInner = b.moe     ? ACT_BYTES * s * d.fe * (d.gated ? 2 : 1) * d.k
                            : b.dense ? ACT_BYTES * s * b.f * (d.gated ? 2 : 1)
                                      : 0.0;
    const double scores = d.flash || !b.attention ? 0.0 : ACT_BYTES * d.a * s * s;
    const double mixer = b.mla()       ? ACT_BYTES * s * d.a * (2 * (d.nope + d.rope) + d.vh)
                         : b.attention ? ACT_BYTES * s * (d.qW + 2 * d.hkv)
                         : b.mamba     ? ACT_BYTES * s * mambaWidths(d).in
                                       : 0.0;
    l.workingBytes = 2 * std::max({scores, mlpInner, mixer});

    // --- communication per sequence per forward ------------------------------------------
    // Each sublayer's output; a MoE sublayer's instead goes through the experts' tensor group
    // (Megatron-Core's alltoall dispatcher: all-gather of the routed copies after the
    // all-to-all, reduce-scatter before the combine).
    l.tpAllReduceBytes = (b.sublayers() - (b.moe ? 1 : 0)) * ACT_BYTES * s * h;
    l.etpGatherBytes = b.moe ? d.k * s * h * ACT_BYTES : 0;
    l.epAllToAllBytes = b.moe ? 2 * d.k * s * h * ACT_BYTES : 0;  // dispatch + combine
    // K and V around the ring (MLA: its per-head K and V); a Mamba block passes no K/V.
    l.cpExchangeBytes = b.mla()       ? s * d.a * (d.nope + d.rope + d.vh) * ACT_BYTES
                        : b.attention ? 2 * s * d.hkv * ACT_BYTES
                                      : 0;
}

LayerProfile blockLayer(const Dims &d, const Block &b, int index)
{
    LayerProfile l;
    l.name = "block" + std::to_string(index);
    l.kind = b.moe ? LayerKind::Moe : b.mamba ? LayerKind::Mamba : LayerKind::Transformer;
    l.kindLabel = b.label;
    blockParameters(d, b, l);
    blockFlops(d, b, l);
    blockOperators(d, b, l);
    blockStash(d, b, l);
    blockWorkingAndComm(d, b, l);
    return l;
}

// A multi-token-prediction module (DeepSeek-V3, Sec. 2.2; Megatron-Core's
// MultiTokenPredictionLayer): the RMSNorms of the hidden state and of the next token's
// embedding, their concatenation projected from 2h to h, one block of the model's last kind,
// and the logits of the shared output head. The embedding and the output head are the main
// model's: a stage without the embedding keeps a copy (tiedParams).
LayerProfile mtpLayer(const Dims &d, const Block &b, int index)
{
    LayerProfile l = blockLayer(d, b, index);
    l.name = "mtp" + std::to_string(index);
    l.kind = LayerKind::Mtp;
    l.kindLabel = "mtp";
    const double s = d.s, h = d.h;
    const double projection = 2 * h * h;
    l.params += 3 * normParams(d) + projection;  // enorm, hnorm, the final norm; eh_proj
    l.tpParams += projection;
    l.activeParams += 3 * normParams(d) + projection;
    l.tiedParams = d.v * h;
    l.fwdFlops += 2 * s * 2 * h * h + 2 * s * h * d.v;
    l.bwdFlops = 2 * l.fwdFlops;
    l.gemms.push_back({1, h, 2 * h, 1, GemmShape::Split::Column, false, false});
    l.gemms.push_back({1, d.v, h, 1, GemmShape::Split::Column, false, false});
    l.elementwiseSpBytes += s * 3 * 2 * ACT_BYTES * h;
    l.elementwiseTpBytes += s * (2 * ACT_BYTES + LOGIT_BYTES) * d.v;
    l.stashSpBytes += ACT_BYTES * s * 2 * h + 2 * ACT_BYTES * s * h;  // eh_proj's input, the norms' inputs
    l.stashTpBytes += LOGIT_BYTES * s * d.v;
    l.workingBytes = std::max(l.workingBytes, ACT_BYTES * s * d.v);
    l.tpAllReduceBytes += ACT_BYTES * s * h;
    l.recomputeStashBytes = 2 * ACT_BYTES * s * h;  // the main hidden state and its own
    l.outputBytes = 2 * ACT_BYTES * s * h;         // the head still needs the main hidden state
    l.opSelectiveStashSpBytes = l.opSelectiveStashTpBytes = l.opRecomputeGemmShare = 0;
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
        split = m.headBias ? d.v : 0;  // phi, GPT-J: a vocab-parallel output bias
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
    p.routerGroups = config.routerGroups;
    p.routerGroupTopK = config.routerGroupTopK;
    p.vocab = config.vocab;
    p.globalBatch = config.globalBatch;
    p.source = config.source;
    p.layers.reserve(static_cast<size_t>(std::max(0, config.layers) + config.mtpLayers) + 2);
    p.layers.push_back(embeddingLayer(config, d));
    const std::vector<LayerKindSpec> stack = config.layerStack();
    for (int i = 0; i < config.layers; ++i)
        p.layers.push_back(blockLayer(d, blockOf(d, stack[static_cast<size_t>(i)]), i));
    for (int i = 0; i < config.mtpLayers && !stack.empty(); ++i)
        p.layers.push_back(mtpLayer(d, blockOf(d, stack.back()), i));
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
