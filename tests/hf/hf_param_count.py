#!/usr/bin/python3
"""Independent parameter-count oracle for Hugging Face config.json files.

Usage:
    hf_param_count.py CONFIG.json            one JSON object on stdout
    hf_param_count.py --all DIR              one JSON line per *.json in DIR (sorted)
    hf_param_count.py --check PUBLISHED.json DIR
                                             compares with published counts and prints
                                             the Markdown table used in README.md;
                                             exits 1 when a difference exceeds 0.1 %

Output fields (integers are exact element counts):
    model_type  the config's model_type (for nested multimodal configs: the text model's)
    class       the transformers class whose parameters are counted
    total       embedding + layers + head + mtp
    embedding   input token embedding (+ position / token-type tables and the embedding
                LayerNorm where the family has them)
    layers      every decoder block (attention, MLP / MoE / Mamba mixer, block norms)
    mtp         multi-token-prediction modules the published checkpoint holds (DeepSeek-V3);
                parameters shared with the main model are not counted again
    head        final norm + lm_head when it is not tied (+ its bias, + BERT's MLM transform)
    layer_groups  runs of consecutive identical blocks: {"kind", "count", "params"} (params per block)
    extras      counts that are not part of `total` but explain published figures:
                vision (vision tower + projector of a multimodal checkpoint), checkpoint_*
                (tensors the published checkpoint stores in addition: copies of shared
                weights, FP8 block scales, BERT pre-training heads)
    notes       defaults taken from configuration_<family>.py, weight sharing, caveats

Written from each family's modelling code (Hugging Face transformers,
src/transformers/models/<family>/modeling_<family>.py and configuration_<family>.py; two
families, deepseek and minicpm, exist only as remote code on the Hub).  The comment above
each family's function names the classes it follows.  Files opened through the code search
while writing this (repository huggingface/transformers unless said otherwise):
    src/transformers/models/deepseek_v3/modeling_deepseek_v3.py
    src/transformers/models/gpt_oss/modular_gpt_oss.py
    src/transformers/models/nemotron_h/modeling_nemotron_h.py
    src/transformers/models/llama4/modeling_llama4.py (+ Llama4TextConfig.moe_layers default,
        seen in copies of configuration_llama4.py)
    src/transformers/models/qwen2_moe/modular_qwen2_moe.py
    src/transformers/models/starcoder2/configuration_starcoder2.py
    modeling_falcon.py FalconAttention / FalconDecoderLayer (copies found by the code search;
        the index does not name their repositories)
    tenstorrent/tt-metal models/demos/deepseek_v3/reference/README_WEIGHTS.md (DeepSeek-V3 MTP)
The other families follow the transformers classes named in their comments; every one of
them is corroborated by an exact match with a published checkpoint total (tests/hf/README.md).
Nothing here is derived from this repository's C++ code.  Standard library only.
"""

import json
import os
import sys


class Count:
    def __init__(self, model_type, cls):
        self.model_type = model_type
        self.cls = cls
        self.embedding = 0
        self.head = 0
        self.mtp = 0
        self.layer_list = []  # (kind, params)
        self.extras = {}
        self.notes = []

    def layer(self, kind, params):
        self.layer_list.append((kind, int(params)))

    def result(self):
        groups = []
        for kind, p in self.layer_list:
            if groups and groups[-1]["kind"] == kind and groups[-1]["params"] == p:
                groups[-1]["count"] += 1
            else:
                groups.append({"kind": kind, "count": 1, "params": p})
        layers = sum(p for _, p in self.layer_list)
        total = self.embedding + layers + self.head + self.mtp
        out = {
            "model_type": self.model_type,
            "class": self.cls,
            "total": total,
            "embedding": self.embedding,
            "layers": layers,
            "mtp": self.mtp,
            "head": self.head,
            "layer_groups": groups,
            "extras": self.extras,
            "notes": self.notes,
        }
        return out


CONFIG_FILE = {"gemma3_text": "gemma3", "llama4_text": "llama4",
               "deepseek": "deepseek (remote code)", "minicpm": "minicpm (remote code)"}


class Cfg:
    """Config reader that records every default it falls back to."""

    def __init__(self, d, notes, family):
        self.d = d
        self.notes = notes
        self.family = family
        self.cfile = CONFIG_FILE.get(family, family)

    def has(self, k):
        return k in self.d and self.d[k] is not None

    def get(self, k, default=None, note=True):
        if k in self.d and self.d[k] is not None:
            return self.d[k]
        if note and default is not None:
            self.notes.append("%s: %s not set, default %r from configuration_%s.py"
                              % (self.family, k, default, self.cfile))
        return default

    def req(self, k):
        if k not in self.d or self.d[k] is None:
            raise ValueError("config lacks required key %r" % k)
        return self.d[k]


# ---------------------------------------------------------------- building blocks
def linear(n_in, n_out, bias):
    """torch.nn.Linear(n_in, n_out, bias)"""
    return n_in * n_out + (n_out if bias else 0)


def layernorm(n, bias=True):
    """torch.nn.LayerNorm(n) (elementwise_affine): weight (+ bias)"""
    return n + (n if bias else 0)


def rmsnorm(n):
    """<Family>RMSNorm(n): one weight vector"""
    return n


def gated_mlp(h, inter, bias=False):
    """gate_proj, up_proj (h -> inter) and down_proj (inter -> h), SwiGLU/GeGLU style"""
    return 2 * linear(h, inter, bias) + linear(inter, h, bias)


def gqa_attention(h, heads, kv_heads, head_dim, q_bias, k_bias, v_bias, o_bias):
    """q_proj, k_proj, v_proj, o_proj"""
    return (linear(h, heads * head_dim, q_bias) + linear(h, kv_heads * head_dim, k_bias)
            + linear(h, kv_heads * head_dim, v_bias) + linear(heads * head_dim, h, o_bias))


def head_and_tie(c, cfg, h, vocab, tie_default, norm_params, lm_bias=False, tie_key_cfg=None):
    """Final norm + lm_head.  A tied lm_head shares the embedding matrix (counted once)."""
    tc = tie_key_cfg if tie_key_cfg is not None else cfg
    tied = bool(tc.get("tie_word_embeddings", tie_default))
    c.head += norm_params
    if tied:
        c.notes.append("lm_head.weight is tied to the input embedding: counted once (in embedding)")
        # Checkpoints that store the tied matrix twice (falcon-7b's safetensors) count it again.
        c.extras["tied_lm_head_copy"] = vocab * h
        if lm_bias:
            c.head += vocab
    else:
        c.head += linear(h, vocab, lm_bias)
    return tied


# ---------------------------------------------------------------- Llama / Mistral / Qwen2 / Qwen3
# llama: modeling_llama.py -- LlamaForCausalLM, LlamaModel, LlamaDecoderLayer, LlamaAttention,
#        LlamaMLP, LlamaRMSNorm; configuration_llama.py (attention_bias, mlp_bias, head_dim,
#        tie_word_embeddings=False).  rope_scaling (llama3) adds no weights.
# mistral: modeling_mistral.py -- MistralForCausalLM, MistralAttention (no biases), MistralMLP;
#        sliding window changes no count.
# qwen2: modeling_qwen2.py -- Qwen2ForCausalLM, Qwen2Attention (q/k/v bias=True, o_proj no bias),
#        Qwen2MLP; configuration_qwen2.py (tie_word_embeddings=False).
# qwen3: modeling_qwen3.py -- Qwen3ForCausalLM, Qwen3Attention (bias=config.attention_bias,
#        q_norm/k_norm = Qwen3RMSNorm(head_dim)), Qwen3MLP; configuration_qwen3.py.
def dense_decoder(c, cfg, family):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = cfg.get("head_dim", None, note=False) or h // heads
    inter = cfg.req("intermediate_size")
    vocab = cfg.req("vocab_size")
    n = cfg.req("num_hidden_layers")
    if family == "qwen2":
        qb = kb = vb = True
        ob = False
        mlp_bias = False
        qk_norm = 0
    elif family == "qwen3":
        ab = bool(cfg.get("attention_bias", False))
        qb = kb = vb = ob = ab
        mlp_bias = False
        qk_norm = 2 * rmsnorm(hd)
    elif family == "mistral":
        qb = kb = vb = ob = False
        mlp_bias = False
        qk_norm = 0
    else:  # llama
        ab = bool(cfg.get("attention_bias", False))
        qb = kb = vb = ob = ab
        mlp_bias = bool(cfg.get("mlp_bias", False))
        qk_norm = 0
    c.embedding += vocab * h
    per = (gqa_attention(h, heads, kv, hd, qb, kb, vb, ob) + qk_norm
           + gated_mlp(h, inter, mlp_bias) + 2 * rmsnorm(h))
    for _ in range(n):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))


# ---------------------------------------------------------------- Mixtral
# mixtral: modeling_mixtral.py -- MixtralForCausalLM, MixtralDecoderLayer, MixtralSparseMoeBlock
#        (gate = Linear(hidden, num_local_experts, bias=False), experts w1/w2/w3 without bias),
#        MixtralAttention (no biases); configuration_mixtral.py (tie_word_embeddings=False).
def mixtral(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = cfg.get("head_dim", None, note=False) or h // heads
    inter = cfg.req("intermediate_size")
    e = cfg.req("num_local_experts")
    vocab = cfg.req("vocab_size")
    c.embedding += vocab * h
    per = (gqa_attention(h, heads, kv, hd, False, False, False, False) + linear(h, e, False)
           + e * gated_mlp(h, inter) + 2 * rmsnorm(h))
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("moe", per)
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))


# ---------------------------------------------------------------- Qwen2-MoE / Qwen3-MoE
# qwen2_moe: modeling_qwen2_moe.py (read: modular_qwen2_moe.py in huggingface/transformers) --
#        Qwen2MoeForCausalLM, Qwen2MoeDecoderLayer (sparse when
#        layer_idx not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0),
#        Qwen2MoeSparseMoeBlock: gate Linear(hidden, num_experts, bias=False), experts
#        Qwen2MoeMLP(moe_intermediate_size), shared_expert Qwen2MoeMLP(shared_expert_intermediate_size),
#        shared_expert_gate Linear(hidden, 1, bias=False); Qwen2MoeAttention q/k/v bias=True, o none.
# qwen3_moe: modeling_qwen3_moe.py -- Qwen3MoeForCausalLM, Qwen3MoeSparseMoeBlock (gate + experts,
#        no shared expert), Qwen3MoeAttention (bias=attention_bias, q_norm/k_norm over head_dim).
def qwen_moe(c, cfg, family):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = cfg.get("head_dim", None, note=False) or h // heads
    inter = cfg.req("intermediate_size")
    moe_inter = cfg.req("moe_intermediate_size")
    e = cfg.req("num_experts")
    vocab = cfg.req("vocab_size")
    step = cfg.get("decoder_sparse_step", 1)
    mlp_only = cfg.get("mlp_only_layers", [], note=False) or []
    if family == "qwen2_moe":
        qkvb = bool(cfg.get("qkv_bias", True, note=False))
        attn = gqa_attention(h, heads, kv, hd, qkvb, qkvb, qkvb, False)
        shared = gated_mlp(h, cfg.get("shared_expert_intermediate_size", 5632)) + linear(h, 1, False)
    else:
        ab = bool(cfg.get("attention_bias", False))
        attn = gqa_attention(h, heads, kv, hd, ab, ab, ab, ab) + 2 * rmsnorm(hd)
        shared = 0
    c.embedding += vocab * h
    for i in range(cfg.req("num_hidden_layers")):
        if i not in mlp_only and e > 0 and (i + 1) % step == 0:
            c.layer("moe", attn + linear(h, e, False) + e * gated_mlp(h, moe_inter) + shared
                    + 2 * rmsnorm(h))
        else:
            c.layer("dense", attn + gated_mlp(h, inter) + 2 * rmsnorm(h))
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))


# ---------------------------------------------------------------- DeepSeek (v1, remote code)
# deepseek: not in transformers; remote code modeling_deepseek.py of deepseek-ai/deepseek-moe-16b-base
#        (auto_map) -- DeepseekForCausalLM, DeepseekDecoderLayer (DeepseekMoE when n_routed_experts
#        and layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq == 0, else
#        DeepseekMLP(intermediate_size)), DeepseekMoE: MoEGate weight [n_routed_experts, hidden]
#        (no bias), experts DeepseekMLP(moe_intermediate_size), shared_experts
#        DeepseekMLP(moe_intermediate_size * n_shared_experts); DeepseekAttention is plain MHA/GQA
#        with bias=attention_bias.  Cross-checked with the DeepseekMoE re-implementations in
#        mlc-ai/mlc-llm and vLLM (same parameter shapes).
def deepseek_v1(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = h // heads
    ab = bool(cfg.get("attention_bias", False))
    vocab = cfg.req("vocab_size")
    e = cfg.get("n_routed_experts", None, note=False)
    first = cfg.get("first_k_dense_replace", 0)
    freq = cfg.get("moe_layer_freq", 1)
    attn = gqa_attention(h, heads, kv, hd, ab, ab, ab, ab)
    c.embedding += vocab * h
    for i in range(cfg.req("num_hidden_layers")):
        if e and i >= first and i % freq == 0:
            mi = cfg.req("moe_intermediate_size")
            sh = cfg.get("n_shared_experts", 0) or 0
            mlp = e * h + e * gated_mlp(h, mi) + (gated_mlp(h, mi * sh) if sh else 0)
            c.layer("moe", attn + mlp + 2 * rmsnorm(h))
        else:
            c.layer("dense", attn + gated_mlp(h, cfg.req("intermediate_size")) + 2 * rmsnorm(h))
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))


# ---------------------------------------------------------------- DeepSeek-V2 / V3 (MLA)
# deepseek_v2: modeling_deepseek_v2.py -- DeepseekV2ForCausalLM, DeepseekV2Attention (q_proj when
#        q_lora_rank is None, else q_a_proj + q_a_layernorm + q_b_proj; kv_a_proj_with_mqa,
#        kv_a_layernorm, kv_b_proj, o_proj), DeepseekV2Moe (gate Linear(hidden, n_routed_experts,
#        bias=False), experts, shared_experts MLP(moe_intermediate_size * n_shared_experts)),
#        configuration_deepseek_v2.py (NOTE: q_lora_rank defaults to 1536 when the key is absent).
# deepseek_v3: modeling_deepseek_v3.py (read in huggingface/transformers,
#        src/transformers/models/deepseek_v3/modeling_deepseek_v3.py) -- DeepseekV3ForCausalLM,
#        DeepseekV3DecoderLayer (DeepseekV3MoE when layer_idx >= first_k_dense_replace),
#        DeepseekV3Attention (same MLA projections, biases = attention_bias on q_a/kv_a/o),
#        DeepseekV3TopkRouter: weight [n_routed_experts, hidden] + buffer e_score_correction_bias
#        [n_routed_experts] (a persistent buffer, stored in the checkpoint: counted here),
#        DeepseekV3MoE: experts + shared_experts.  transformers ignores the checkpoint's
#        model.layers.61.* (the MTP module, _keys_to_ignore_on_load_unexpected); it is counted
#        here from tenstorrent/tt-metal models/demos/deepseek_v3/reference/README_WEIGHTS.md
#        (DeepSeek's README_WEIGHTS): per MTP module embed_tokens (shared with the main
#        embedding), enorm and hnorm (RMSNorm), eh_proj Linear(2*hidden, hidden, bias=False),
#        one decoder layer (MoE: its index is >= first_k_dense_replace), shared_head.norm
#        (RMSNorm), shared_head.head (shared with lm_head).
def mla_attention(cfg, h):
    heads = cfg.req("num_attention_heads")
    ab = bool(cfg.get("attention_bias", False))
    q_lora = cfg.d.get("q_lora_rank", "absent")
    if q_lora == "absent":
        q_lora = 1536
        cfg.notes.append("%s: q_lora_rank not set, default 1536 from configuration_%s.py"
                         % (cfg.family, cfg.cfile))
    nope = cfg.req("qk_nope_head_dim")
    rope = cfg.req("qk_rope_head_dim")
    vdim = cfg.req("v_head_dim")
    kvl = cfg.req("kv_lora_rank")
    qk = nope + rope
    p = 0
    if q_lora is None:
        p += linear(h, heads * qk, False)
    else:
        p += linear(h, q_lora, ab) + rmsnorm(q_lora) + linear(q_lora, heads * qk, False)
    p += linear(h, kvl + rope, ab) + rmsnorm(kvl) + linear(kvl, heads * (nope + vdim), False)
    p += linear(heads * vdim, h, ab)
    return p


def mla_moe(cfg, h, v3):
    e = cfg.req("n_routed_experts")
    mi = cfg.req("moe_intermediate_size")
    sh = cfg.get("n_shared_experts", 1 if v3 else 2) or 0
    p = e * gated_mlp(h, mi) + (gated_mlp(h, mi * sh) if sh else 0)
    p += e * h  # router / gate weight
    if v3:
        p += e  # e_score_correction_bias
    return p


def deepseek_mla(c, cfg, v3):
    h = cfg.req("hidden_size")
    vocab = cfg.req("vocab_size")
    n = cfg.req("num_hidden_layers")
    first = cfg.get("first_k_dense_replace", 3 if v3 else 0)
    freq = cfg.get("moe_layer_freq", 1)
    attn = mla_attention(cfg, h)
    dense = attn + gated_mlp(h, cfg.req("intermediate_size")) + 2 * rmsnorm(h)
    moe = attn + mla_moe(cfg, h, v3) + 2 * rmsnorm(h)
    has_experts = cfg.get("n_routed_experts", None, note=False)

    def is_moe(i):
        if not has_experts or i < first:
            return False
        return v3 or i % freq == 0

    c.embedding += vocab * h
    for i in range(n):
        c.layer("moe" if is_moe(i) else "dense", moe if is_moe(i) else dense)
    tied = head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))
    if v3:
        c.notes.append("e_score_correction_bias is a persistent buffer in DeepseekV3TopkRouter, not an "
                       "nn.Parameter; counted because the checkpoint stores it (%d per MoE layer)"
                       % cfg.req("n_routed_experts"))
        k = cfg.get("num_nextn_predict_layers", 0, note=False) or 0
        if k:
            per = []
            for j in range(k):
                idx = n + j
                blk = moe if is_moe(idx) else dense
                per.append(2 * rmsnorm(h) + linear(2 * h, h, False) + blk + rmsnorm(h))
            c.mtp = sum(per)
            c.notes.append("mtp: %d module(s) = enorm + hnorm + eh_proj (2*hidden -> hidden) + one %s "
                           "decoder layer + shared_head.norm; embed_tokens and shared_head.head share the "
                           "main model's embedding and lm_head and are not counted again"
                           % (k, "MoE" if is_moe(n) else "dense"))
            copies = k * (vocab * h + (0 if tied else vocab * h))
            c.extras["checkpoint_mtp_shared_copies"] = copies
            c.notes.append("the published checkpoint stores model.layers.%d.embed_tokens and "
                           "shared_head.head as separate tensors (copies of the shared weights): %d "
                           "elements, reported in extras only" % (n, copies))
        q = cfg.d.get("quantization_config") or {}
        bs = q.get("weight_block_size")
        if q.get("quant_method") == "fp8" and bs:
            c.extras["checkpoint_fp8_scales"] = fp8_scale_count(cfg, h, n + k, is_moe, bs)
            c.notes.append("checkpoint_fp8_scales: one float32 weight_scale_inv per %dx%d block of every "
                           "FP8 Linear in the decoder and MTP layers (not model parameters)" % tuple(bs))


def fp8_scale_count(cfg, h, nlayers, is_moe, bs):
    def blocks(n_out, n_in):
        return -(-n_out // bs[0]) * -(-n_in // bs[1])
    heads = cfg.req("num_attention_heads")
    q_lora = cfg.d.get("q_lora_rank", 1536)
    nope, rope = cfg.req("qk_nope_head_dim"), cfg.req("qk_rope_head_dim")
    vdim, kvl = cfg.req("v_head_dim"), cfg.req("kv_lora_rank")
    a = 0
    if q_lora is None:
        a += blocks(heads * (nope + rope), h)
    else:
        a += blocks(q_lora, h) + blocks(heads * (nope + rope), q_lora)
    a += blocks(kvl + rope, h) + blocks(heads * (nope + vdim), kvl) + blocks(h, heads * vdim)

    def mlp(i):
        return 2 * blocks(i, h) + blocks(h, i)
    mi = cfg.req("moe_intermediate_size")
    e = cfg.req("n_routed_experts")
    sh = cfg.get("n_shared_experts", 1, note=False)
    total = 0
    for i in range(nlayers):
        if is_moe(i):
            total += a + e * mlp(mi) + mlp(mi * sh)
        else:
            total += a + mlp(cfg.req("intermediate_size"))
    return total


# ---------------------------------------------------------------- Gemma / Gemma2 / Gemma3
# gemma: modeling_gemma.py -- GemmaForCausalLM, GemmaModel (embed_tokens), GemmaDecoderLayer
#        (input_layernorm, post_attention_layernorm = GemmaRMSNorm(hidden)), GemmaAttention
#        (bias=attention_bias, head_dim from config), GemmaMLP (gate/up/down, no bias);
#        configuration_gemma.py (head_dim=256, tie_word_embeddings=True).
# gemma2: modeling_gemma2.py -- Gemma2DecoderLayer adds pre_feedforward_layernorm and
#        post_feedforward_layernorm (4 norms per layer); softcapping and sliding windows add
#        no weights; configuration_gemma2.py (tie_word_embeddings=True).
# gemma3 / gemma3_text: modeling_gemma3.py -- Gemma3ForCausalLM / Gemma3ForConditionalGeneration
#        (text model = Gemma3TextModel: Gemma3TextScaledWordEmbedding, Gemma3DecoderLayer with the
#        4 norms of Gemma2 plus Gemma3Attention.q_norm / k_norm = Gemma3RMSNorm(head_dim));
#        configuration_gemma3.py (Gemma3TextConfig: vocab_size=262208, head_dim=256,
#        num_attention_heads=8, num_key_value_heads=4, tie_word_embeddings=True).  The vision side
#        (SiglipVisionModel from modeling_siglip.py + Gemma3MultiModalProjector:
#        mm_input_projection_weight [vision_hidden, text_hidden] and mm_soft_emb_norm) is reported
#        in extras.vision only: `total` is the text model.
GEMMA3_TEXT_DEFAULTS = {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                        "num_hidden_layers": 26, "num_attention_heads": 8,
                        "num_key_value_heads": 4, "head_dim": 256, "attention_bias": False}


def gemma(c, cfg, version, top=None):
    h = cfg.req("hidden_size") if version < 3 else cfg.get("hidden_size", 2304)
    if version < 3:
        heads = cfg.req("num_attention_heads")
        kv = cfg.get("num_key_value_heads", heads)
        hd = cfg.get("head_dim", 256)
        inter = cfg.req("intermediate_size")
        vocab = cfg.req("vocab_size")
        n = cfg.req("num_hidden_layers")
    else:
        D = GEMMA3_TEXT_DEFAULTS
        heads = cfg.get("num_attention_heads", D["num_attention_heads"])
        kv = cfg.get("num_key_value_heads", D["num_key_value_heads"])
        hd = cfg.get("head_dim", D["head_dim"])
        inter = cfg.get("intermediate_size", D["intermediate_size"])
        vocab = cfg.get("vocab_size", D["vocab_size"])
        n = cfg.get("num_hidden_layers", D["num_hidden_layers"])
    ab = bool(cfg.get("attention_bias", False, note=False))
    attn = gqa_attention(h, heads, kv, hd, ab, ab, ab, ab)
    if version == 3:
        attn += 2 * rmsnorm(hd)
    norms = (2 if version == 1 else 4) * rmsnorm(h)
    c.embedding += vocab * h
    for _ in range(n):
        c.layer("dense", attn + gated_mlp(h, inter) + norms)
    head_and_tie(c, cfg, h, vocab, True, rmsnorm(h), tie_key_cfg=top)
    return h


def siglip_vision(v, notes):
    # modeling_siglip.py -- SiglipVisionEmbeddings (patch_embedding Conv2d with bias,
    # position_embedding Embedding(num_patches, hidden)), SiglipEncoderLayer (layer_norm1/2,
    # SiglipAttention q/k/v/out_proj with bias, SiglipMLP fc1/fc2 with bias), post_layernorm;
    # SiglipMultiheadAttentionPoolingHead when vision_use_head.
    hv = v.get("hidden_size", 768)
    iv = v.get("intermediate_size", 3072)
    nl = v.get("num_hidden_layers", 12)
    ch = v.get("num_channels", 3)
    ps = v.get("patch_size", 16)
    img = v.get("image_size", 224)
    p = ch * ps * ps * hv + hv + (img // ps) ** 2 * hv
    per = 4 * linear(hv, hv, True) + 2 * layernorm(hv) + linear(hv, iv, True) + linear(iv, hv, True)
    p += nl * per + layernorm(hv)
    if v.get("vision_use_head", True):
        p += hv + 3 * hv * hv + 3 * hv + linear(hv, hv, True) + layernorm(hv) \
            + linear(hv, iv, True) + linear(iv, hv, True)
        notes.append("siglip vision_use_head: attention-pooling head counted in extras.vision")
    return p, hv


# ---------------------------------------------------------------- Phi / Phi-3
# phi: modeling_phi.py -- PhiForCausalLM (lm_head Linear(hidden, vocab, bias=True)), PhiModel
#      (embed_tokens, final_layernorm LayerNorm), PhiDecoderLayer (one input_layernorm LayerNorm,
#      parallel attention+MLP), PhiAttention (q/k/v/dense with bias=True; q_layernorm/k_layernorm
#      LayerNorm(head_dim) when qk_layernorm), PhiMLP (fc1/fc2 with bias); partial_rotary_factor
#      adds no weights; configuration_phi.py (tie_word_embeddings=False).
# phi3: modeling_phi3.py -- Phi3ForCausalLM, Phi3Attention (fused qkv_proj, o_proj, no bias),
#      Phi3MLP (fused gate_up_proj -> 2*intermediate, down_proj, no bias), Phi3DecoderLayer (two
#      Phi3RMSNorm); configuration_phi3.py (tie_word_embeddings=False).
def phi(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = h // heads
    inter = cfg.req("intermediate_size")
    vocab = cfg.req("vocab_size")
    attn = gqa_attention(h, heads, kv, hd, True, True, True, True)
    if cfg.get("qk_layernorm", False):
        attn += 2 * layernorm(hd)
    per = attn + linear(h, inter, True) + linear(inter, h, True) + layernorm(h)
    c.embedding += vocab * h
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, False, layernorm(h), lm_bias=True)


def phi3(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = cfg.get("head_dim", None, note=False) or h // heads
    inter = cfg.req("intermediate_size")
    vocab = cfg.req("vocab_size")
    qkv = heads * hd + 2 * kv * hd
    per = linear(h, qkv, False) + linear(heads * hd, h, False) + linear(h, 2 * inter, False) \
        + linear(inter, h, False) + 2 * rmsnorm(h)
    c.embedding += vocab * h
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))


# ---------------------------------------------------------------- MiniCPM (remote code)
# minicpm: not in transformers; remote code modeling_minicpm.py of openbmb/MiniCPM-2B-sft-bf16 and
#      openbmb/MiniCPM-MoE-8x2B -- MiniCPMForCausalLM (lm_head Linear(hidden, vocab, bias=False),
#      tied by tie_word_embeddings), MiniCPMDecoderLayer (input_layernorm, post_attention_layernorm
#      MiniCPMRMSNorm), MiniCPMAttention (q/k/v/o, bias=attention_bias, default False), MiniCPMMLP
#      (gate/up/down), MiniCPMMoE when num_experts is set (gate Linear(hidden, num_experts,
#      bias=False) + num_experts MiniCPMMLP(intermediate_size), every layer).  scale_emb,
#      scale_depth and dim_model_base only rescale activations.  Shapes cross-checked against
#      the MiniCPM / MiniCPMMoE re-implementations in mlc-ai/mlc-llm and vLLM.
def minicpm(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = h // heads
    inter = cfg.req("intermediate_size")
    vocab = cfg.req("vocab_size")
    ab = bool(cfg.get("attention_bias", False, note=False))
    e = cfg.get("num_experts", None, note=False)
    attn = gqa_attention(h, heads, kv, hd, ab, ab, ab, ab)
    if e:
        per = attn + linear(h, e, False) + e * gated_mlp(h, inter) + 2 * rmsnorm(h)
        kind = "moe"
    else:
        per = attn + gated_mlp(h, inter) + 2 * rmsnorm(h)
        kind = "dense"
    c.embedding += vocab * h
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer(kind, per)
    c.notes.append("minicpm: scale_emb / scale_depth / dim_model_base scale activations, no weights")
    head_and_tie(c, cfg, h, vocab, True, rmsnorm(h))


# ---------------------------------------------------------------- GPT-NeoX (Pythia)
# gpt_neox: modeling_gpt_neox.py -- GPTNeoXForCausalLM (embed_out Linear(hidden, vocab,
#      bias=False)), GPTNeoXModel (embed_in, final_layer_norm LayerNorm), GPTNeoXLayer
#      (input_layernorm, post_attention_layernorm LayerNorm; the parallel residual changes no
#      count), GPTNeoXAttention (query_key_value Linear(hidden, 3*hidden), dense, bias =
#      attention_bias, default True), GPTNeoXMLP (dense_h_to_4h, dense_4h_to_h with bias);
#      rotary_pct adds no weights; configuration_gpt_neox.py (tie_word_embeddings=False).
def gpt_neox(c, cfg):
    h = cfg.req("hidden_size")
    inter = cfg.req("intermediate_size")
    vocab = cfg.req("vocab_size")
    ab = bool(cfg.get("attention_bias", True, note=False))
    per = 2 * layernorm(h) + linear(h, 3 * h, ab) + linear(h, h, ab) + linear(h, inter, True) \
        + linear(inter, h, True)
    c.embedding += vocab * h
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, False, layernorm(h))


# ---------------------------------------------------------------- GPT-J
# gptj: modeling_gptj.py -- GPTJForCausalLM (lm_head Linear(n_embd, vocab) WITH bias), GPTJModel
#      (wte, ln_f LayerNorm), GPTJBlock (one ln_1, parallel attention+MLP), GPTJAttention
#      (q/k/v/out_proj without bias; rotary embedding is a buffer), GPTJMLP (fc_in/fc_out with
#      bias, width n_inner or 4*n_embd); configuration_gptj.py (tie_word_embeddings=False).
def gptj(c, cfg):
    h = cfg.req("n_embd")
    inter = cfg.get("n_inner", None, note=False) or 4 * h
    vocab = cfg.req("vocab_size")
    per = layernorm(h) + 4 * linear(h, h, False) + linear(h, inter, True) + linear(inter, h, True)
    c.embedding += vocab * h
    for _ in range(cfg.req("n_layer")):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, False, layernorm(h), lm_bias=True)


# ---------------------------------------------------------------- GPT-2
# gpt2: modeling_gpt2.py -- GPT2LMHeadModel (lm_head tied to wte), GPT2Model (wte, wpe
#      [n_positions, n_embd], ln_f), GPT2Block (ln_1, ln_2), GPT2Attention (c_attn Conv1D 3*n_embd,
#      c_proj Conv1D, both with bias; the causal-mask "bias" is a buffer), GPT2MLP (c_fc, c_proj
#      Conv1D with bias, width n_inner or 4*n_embd).
def gpt2(c, cfg):
    h = cfg.req("n_embd")
    inter = cfg.get("n_inner", None, note=False) or 4 * h
    vocab = cfg.req("vocab_size")
    c.embedding += vocab * h + cfg.req("n_positions") * h
    per = 2 * layernorm(h) + linear(h, 3 * h, True) + linear(h, h, True) + linear(h, inter, True) \
        + linear(inter, h, True)
    for _ in range(cfg.req("n_layer")):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, True, layernorm(h))


# ---------------------------------------------------------------- BERT
# bert: modeling_bert.py -- BertForMaskedLM (architectures[0] of bert-large-uncased):
#      BertModel(add_pooling_layer=False) = BertEmbeddings (word, position, token_type, LayerNorm)
#      + BertLayer (BertSelfAttention q/k/v with bias, BertSelfOutput dense + LayerNorm,
#      BertIntermediate dense, BertOutput dense + LayerNorm) + BertOnlyMLMHead
#      (BertPredictionHeadTransform dense + LayerNorm, decoder tied to word embeddings + bias
#      [vocab]).  The published checkpoint is BertForPreTraining: + BertPooler dense and the NSP
#      head seq_relationship Linear(hidden, 2) -> extras.checkpoint_bert_pretraining_heads.
def bert(c, cfg):
    h = cfg.req("hidden_size")
    inter = cfg.req("intermediate_size")
    vocab = cfg.req("vocab_size")
    c.embedding += (vocab + cfg.req("max_position_embeddings") + cfg.get("type_vocab_size", 2)) * h \
        + layernorm(h)
    per = 4 * linear(h, h, True) + linear(h, inter, True) + linear(inter, h, True) + 2 * layernorm(h)
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("encoder", per)
    c.head += linear(h, h, True) + layernorm(h) + vocab  # MLM transform + decoder bias
    c.notes.append("bert: MLM decoder weight tied to word embeddings; head = transform + decoder bias")
    c.extras["checkpoint_bert_pretraining_heads"] = linear(h, h, True) + linear(h, 2, True)


# ---------------------------------------------------------------- Falcon
# falcon: modeling_falcon.py -- FalconForCausalLM (lm_head Linear(hidden, vocab, bias=False), tied
#      by default), FalconModel (word_embeddings, ln_f LayerNorm), FalconAttention
#      (query_key_value out = (2*num_kv_heads + heads)*head_dim with new_decoder_architecture,
#      hidden + 2*head_dim with multi_query, else 3*hidden; dense; bias=config.bias), FalconMLP
#      (dense_h_to_4h -> ffn_hidden_size (default 4*hidden), dense_4h_to_h, bias=config.bias),
#      FalconDecoderLayer (not parallel_attn: input_layernorm + post_attention_layernorm;
#      parallel_attn with num_ln_in_parallel_attn == 2 (the default when
#      new_decoder_architecture): ln_attn + ln_mlp; otherwise input_layernorm only; all
#      LayerNorm with bias).  ALiBi adds no weights.  (Read through copies of modeling_falcon.py
#      returned by the code search; their repositories are not named by the index.)  configuration_falcon.py defaults:
#      bias=False, parallel_attn=True, multi_query=True, tie_word_embeddings=True.
def falcon(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    hd = h // heads
    vocab = cfg.req("vocab_size")
    bias = bool(cfg.get("bias", False))
    new = bool(cfg.get("new_decoder_architecture", False))
    mq = bool(cfg.get("multi_query", True))
    par = bool(cfg.get("parallel_attn", True))
    kv = cfg.get("num_kv_heads", heads, note=False)
    ffn = cfg.get("ffn_hidden_size", None, note=False) or 4 * h
    if new:
        qkv = (2 * kv + heads) * hd
    elif mq:
        qkv = h + 2 * hd
    else:
        qkv = 3 * h
    nln = cfg.get("num_ln_in_parallel_attn", None, note=False)
    if nln is None and new:
        nln = 2
    if not par:
        norms = 2
    elif nln == 2:
        norms = 2
    else:
        norms = 1
    per = linear(h, qkv, bias) + linear(h, h, bias) + linear(h, ffn, bias) + linear(ffn, h, bias) \
        + norms * layernorm(h)
    c.embedding += vocab * h
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, True, layernorm(h))


# ---------------------------------------------------------------- StarCoder2
# starcoder2: modeling_starcoder2.py -- Starcoder2ForCausalLM, Starcoder2Attention (q/k/v/o with
#      bias=use_bias), Starcoder2MLP (c_fc, c_proj with bias=use_bias, not gated),
#      Starcoder2DecoderLayer (input_layernorm, post_attention_layernorm: nn.LayerNorm with bias),
#      Starcoder2Model.norm LayerNorm; configuration_starcoder2.py (read in huggingface/transformers
#      src/transformers/models/starcoder2/configuration_starcoder2.py: use_bias=True,
#      tie_word_embeddings=True).
def starcoder2(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = h // heads
    inter = cfg.req("intermediate_size")
    vocab = cfg.req("vocab_size")
    b = bool(cfg.get("use_bias", True))
    per = gqa_attention(h, heads, kv, hd, b, b, b, b) + linear(h, inter, b) + linear(inter, h, b) \
        + 2 * layernorm(h)
    c.embedding += vocab * h
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("dense", per)
    head_and_tie(c, cfg, h, vocab, True, layernorm(h))


# ---------------------------------------------------------------- gpt-oss
# gpt_oss: modeling_gpt_oss.py / modular_gpt_oss.py (read in huggingface/transformers
#      src/transformers/models/gpt_oss/modular_gpt_oss.py) -- GptOssForCausalLM, GptOssAttention
#      (q/k/v/o with bias=attention_bias, sinks Parameter [num_attention_heads]), GptOssMLP =
#      GptOssTopKRouter (weight [E, hidden] + bias [E]) + GptOssExperts (gate_up_proj
#      [E, hidden, 2*intermediate] + gate_up_proj_bias [E, 2*intermediate], down_proj
#      [E, intermediate, hidden] + down_proj_bias [E, hidden]), two GptOssRMSNorm per layer.
#      Sliding / full layer_types change no count.
def gpt_oss(c, cfg):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = cfg.get("head_dim", 64)
    inter = cfg.req("intermediate_size")
    e = cfg.req("num_local_experts")
    vocab = cfg.req("vocab_size")
    ab = bool(cfg.get("attention_bias", True))
    attn = gqa_attention(h, heads, kv, hd, ab, ab, ab, ab) + heads
    mlp = e * h + e + e * h * 2 * inter + e * 2 * inter + e * inter * h + e * h
    c.embedding += vocab * h
    for _ in range(cfg.req("num_hidden_layers")):
        c.layer("moe", attn + mlp + 2 * rmsnorm(h))
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))
    c.notes.append("gpt_oss: attention sinks (%d per layer) and all biases counted" % heads)


# ---------------------------------------------------------------- Nemotron-H
# nemotron_h: modeling_nemotron_h.py (read in huggingface/transformers
#      src/transformers/models/nemotron_h/modeling_nemotron_h.py) -- NemotronHForCausalLM,
#      NemotronHModel (embeddings, norm_f), NemotronHBlock (one NemotronHRMSNorm + mixer chosen by
#      layers_block_type, i.e. hybrid_override_pattern: M=mamba, *=attention, -=mlp, E=moe),
#      NemotronHMamba2Mixer (in_proj Linear(hidden, intermediate + conv_dim + num_heads,
#      bias=use_bias) with intermediate = mamba_num_heads * mamba_head_dim and conv_dim =
#      intermediate + 2*n_groups*ssm_state_size; depthwise conv1d (conv_dim*conv_kernel weights +
#      conv_dim bias when use_conv_bias); dt_bias, A_log, D [num_heads]; gated RMSNorm
#      [intermediate]; out_proj Linear(intermediate, hidden, bias=use_bias)), NemotronHAttention
#      (q/k/v/o, bias=False, head_dim = head_dim or hidden/heads), NemotronHMLP (up_proj,
#      down_proj, bias=mlp_bias, not gated), NemotronHMoE (NemotronHExperts up/down
#      [E, I, in] without gate, NemotronHTopkRouter weight + e_score_correction_bias buffer,
#      shared_experts NemotronHMLP(moe_shared_expert_intermediate_size), optional
#      fc1/fc2_latent_proj when moe_latent_size).
def nemotron_h(c, cfg):
    h = cfg.req("hidden_size")
    vocab = cfg.req("vocab_size")
    pattern = cfg.get("hybrid_override_pattern", None, note=False)
    if pattern:
        kinds = [{"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}[ch] for ch in pattern]
    else:
        kinds = cfg.req("layers_block_type")
    nh = cfg.req("mamba_num_heads")
    inner = nh * cfg.req("mamba_head_dim")
    ng = cfg.get("n_groups", 8)
    st = cfg.get("ssm_state_size", 128)
    ker = cfg.get("conv_kernel", 4)
    ub = bool(cfg.get("use_bias", False))
    ucb = bool(cfg.get("use_conv_bias", True))
    conv_dim = inner + 2 * ng * st
    mamba = linear(h, inner + conv_dim + nh, ub) + conv_dim * ker + (conv_dim if ucb else 0) \
        + 3 * nh + rmsnorm(inner) + linear(inner, h, ub)
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = cfg.get("head_dim", None, note=False) or cfg.get("attention_head_dim", None, note=False) \
        or h // heads
    attn = gqa_attention(h, heads, kv, hd, False, False, False, False)
    mb = bool(cfg.get("mlp_bias", False))
    mlp = linear(h, cfg.get("intermediate_size", 21504), mb) \
        + linear(cfg.get("intermediate_size", 21504), h, mb)
    c.embedding += vocab * h
    for kind in kinds:
        if kind == "mamba":
            p = mamba
        elif kind == "attention":
            p = attn
        elif kind == "mlp":
            p = mlp
        else:
            e = cfg.req("n_routed_experts")
            mi = cfg.req("moe_intermediate_size")
            lat = cfg.get("moe_latent_size", None, note=False)
            ind = lat or h
            si = cfg.req("moe_shared_expert_intermediate_size")
            p = e * 2 * mi * ind + e * h + e + linear(h, si, mb) + linear(si, h, mb)
            if lat:
                p += linear(h, lat, mb) + linear(lat, h, mb)
        c.layer(kind, p + rmsnorm(h))
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h))
    if "moe" in kinds:
        c.notes.append("nemotron_h: e_score_correction_bias buffer counted per MoE block")


# ---------------------------------------------------------------- Llama 4
# llama4 / llama4_text: modeling_llama4.py (read in huggingface/transformers
#      src/transformers/models/llama4/modeling_llama4.py) -- Llama4ForConditionalGeneration /
#      Llama4ForCausalLM; Llama4TextDecoderLayer is MoE when layer_idx in config.moe_layers
#      (configuration_llama4.py default: range(interleave_moe_layer_step - 1, num_hidden_layers,
#      interleave_moe_layer_step)), else Llama4TextMLP(intermediate_size_mlp);
#      Llama4TextMoe = Llama4TextExperts (gate_up_proj [E, hidden, 2*intermediate], down_proj
#      [E, intermediate, hidden]) + Llama4Router Linear(hidden, E, bias=False) + shared_expert
#      Llama4TextMLP(intermediate_size); Llama4TextAttention q/k/v/o bias=attention_bias, qk_norm
#      is Llama4TextL2Norm (no weights).  Vision (Llama4VisionModel + Llama4MultiModalProjector)
#      goes to extras.vision.
def llama4_text(c, cfg, top):
    h = cfg.req("hidden_size")
    heads = cfg.req("num_attention_heads")
    kv = cfg.get("num_key_value_heads", heads, note=False)
    hd = cfg.get("head_dim", None, note=False) or h // heads
    vocab = cfg.req("vocab_size")
    n = cfg.req("num_hidden_layers")
    e = cfg.req("num_local_experts")
    inter = cfg.req("intermediate_size")
    inter_mlp = cfg.req("intermediate_size_mlp")
    step = cfg.get("interleave_moe_layer_step", 1)
    moe_layers = cfg.get("moe_layers", None, note=False)
    if moe_layers is None:
        moe_layers = list(range(step - 1, n, step))
    ab = bool(cfg.get("attention_bias", False))
    attn = gqa_attention(h, heads, kv, hd, ab, ab, ab, ab)
    moe = attn + e * h * 2 * inter + e * inter * h + linear(h, e, False) + gated_mlp(h, inter) \
        + 2 * rmsnorm(h)
    dense = attn + gated_mlp(h, inter_mlp) + 2 * rmsnorm(h)
    c.embedding += vocab * h
    for i in range(n):
        if i in moe_layers:
            c.layer("moe", moe)
        else:
            c.layer("dense", dense)
    head_and_tie(c, cfg, h, vocab, False, rmsnorm(h), tie_key_cfg=top)
    return h


def llama4_vision(v, text_h):
    # modeling_llama4.py -- Llama4VisionModel: class_embedding [H], positional_embedding_vlm
    # [(image/patch)^2 + 1, H], patch_embedding (Llama4UnfoldConvolution: Linear(C*p*p, H,
    # bias=False)), layernorm_pre / layernorm_post (LayerNorm), Llama4VisionEncoderLayer
    # (q/k/v/o with bias, Llama4VisionMLP fc1/fc2 with bias, two LayerNorm), vision_adapter
    # Llama4VisionPixelShuffleMLP (fc1 Linear(intermediate_size, projector_input_dim),
    # fc2 Linear(projector_input_dim, projector_output_dim), no bias);
    # Llama4MultiModalProjector linear_1 Linear(vision_output_dim, text hidden, bias=False).
    H = v["hidden_size"]
    I = v["intermediate_size"]
    ps = v["patch_size"]
    img = v["image_size"]
    ch = v.get("num_channels", 3)
    p = H + ((img // ps) ** 2 + 1) * H + ch * ps * ps * H + 2 * layernorm(H)
    per = 4 * linear(H, H, True) + linear(H, I, True) + linear(I, H, True) + 2 * layernorm(H)
    p += v["num_hidden_layers"] * per
    p += I * v["projector_input_dim"] + v["projector_input_dim"] * v["projector_output_dim"]
    p += linear(v["vision_output_dim"], text_h, bool(v.get("multi_modal_projector_bias", False)))
    return p


# ---------------------------------------------------------------- dispatch
DENSE_FAMILIES = {"llama", "mistral", "qwen2", "qwen3"}


def count(config):
    notes = []
    top = config
    mt = config.get("model_type")
    nested = isinstance(config.get("text_config"), dict)
    if nested:
        text = dict(config["text_config"])
        text_mt = text.get("model_type") or {"gemma3": "gemma3_text", "llama4": "llama4_text"}.get(mt, mt)
        notes.append("multimodal config (%s): text_config counted; vision_config reported in "
                     "extras.vision only" % mt)
    else:
        text = config
        text_mt = mt
    fam = text_mt
    cls_name = (config.get("architectures") or ["?"])[0]
    c = Count(text_mt, cls_name)
    c.notes = notes
    cfg = Cfg(text, notes, fam)
    topcfg = Cfg(top, notes, fam) if nested else None
    if fam in DENSE_FAMILIES:
        dense_decoder(c, cfg, fam)
    elif fam == "mixtral":
        mixtral(c, cfg)
    elif fam in ("qwen2_moe", "qwen3_moe"):
        qwen_moe(c, cfg, fam)
    elif fam == "deepseek":
        deepseek_v1(c, cfg)
    elif fam == "deepseek_v2":
        deepseek_mla(c, cfg, v3=False)
    elif fam == "deepseek_v3":
        deepseek_mla(c, cfg, v3=True)
    elif fam == "gemma":
        gemma(c, cfg, 1)
    elif fam == "gemma2":
        gemma(c, cfg, 2)
    elif fam in ("gemma3_text", "gemma3"):
        th = gemma(c, cfg, 3, top=topcfg)
        if nested and isinstance(top.get("vision_config"), dict):
            vp, hv = siglip_vision(top["vision_config"], notes)
            c.extras["vision"] = vp + hv * th + rmsnorm(hv)
    elif fam == "phi":
        phi(c, cfg)
    elif fam == "phi3":
        phi3(c, cfg)
    elif fam == "minicpm":
        minicpm(c, cfg)
    elif fam == "gpt_neox":
        gpt_neox(c, cfg)
    elif fam == "gptj":
        gptj(c, cfg)
    elif fam == "gpt2":
        gpt2(c, cfg)
    elif fam == "bert":
        bert(c, cfg)
    elif fam == "falcon":
        falcon(c, cfg)
    elif fam == "starcoder2":
        starcoder2(c, cfg)
    elif fam == "gpt_oss":
        gpt_oss(c, cfg)
    elif fam == "nemotron_h":
        nemotron_h(c, cfg)
    elif fam in ("llama4_text", "llama4"):
        th = llama4_text(c, cfg, topcfg)
        if nested and isinstance(top.get("vision_config"), dict):
            c.extras["vision"] = llama4_vision(top["vision_config"], th)
    else:
        raise ValueError("unsupported model_type %r" % fam)
    return c.result()


def load(path):
    with open(path) as f:
        return json.load(f)


def check(published_path, directory):
    pub = load(published_path)
    rows = []
    worst = 0.0
    failed = []
    for name in sorted(pub):
        entry = pub[name]
        r = count(load(os.path.join(directory, name)))
        comparable = r["total"]
        parts = []
        for key in entry.get("adds", []):
            if key == "tied_lm_head_copy":
                comparable += r["embedding"]
            else:
                comparable += r["extras"][key]
            parts.append(key)
        if not entry.get("counts_mtp", False):
            comparable -= r["mtp"]
        diff = 100.0 * (comparable - entry["params"]) / entry["params"]
        exact = entry.get("exact", True)
        if exact:
            worst = max(worst, abs(diff))
            if abs(diff) > 0.1:
                failed.append(name)
        rows.append((name, r["model_type"], r["total"], comparable, entry["params"], diff, exact,
                     "+".join(parts) or "-", entry.get("source_short", entry["source"])))
    print("| file | model_type | oracle total | oracle, as published counts | published | difference % "
          "| exact? | added to oracle | source |")
    print("|---|---|---:|---:|---:|---:|---|---|---|")
    for n, mt, tot, comp, p, d, ex, parts, src in rows:
        print("| %s | %s | %s | %s | %s | %+.4f | %s | %s | %s |"
              % (n, mt, format(tot, ","), format(comp, ","), format(p, ","), d,
                 "yes" if ex else "coarse", parts, src))
    print()
    print("largest |difference| among exact published counts: %.4f %%" % worst)
    if failed:
        print("over 0.1 %%: %s" % ", ".join(failed))
        return 1
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--all":
        rc = 0
        for name in sorted(os.listdir(argv[2])):
            if not name.endswith(".json"):
                continue
            try:
                r = count(load(os.path.join(argv[2], name)))
                r = {"file": name, **r}
            except (ValueError, KeyError) as ex:
                r = {"file": name, "error": str(ex)}
                rc = 1
            print(json.dumps(r))
        return rc
    if len(argv) == 4 and argv[1] == "--check":
        return check(argv[2], argv[3])
    if len(argv) == 2 and not argv[1].startswith("--"):
        try:
            print(json.dumps(count(load(argv[1])), indent=1))
        except (ValueError, KeyError) as ex:
            sys.stderr.write("%s: %s\n" % (argv[1], ex))
            return 1
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
