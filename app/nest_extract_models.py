"""Reference PyTorch modules for nest-extract --hf-config (plain PyTorch, written in this project).

GPT2LM follows a Hugging Face GPT-2 config.json (n_embd, n_layer, n_head, n_inner, n_positions,
vocab_size, *_pdrop, layer_norm_epsilon, tie_word_embeddings); LlamaLM a Llama / Mistral one
(hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size,
vocab_size, max_position_embeddings, rms_norm_eps, tie_word_embeddings). Both take
forward(input_ids, labels) and return the mean cross-entropy loss, computed in FP32.

They are written as a training stack runs them, because nest-extract counts what autograd
saves for backward (docs/formats.md, "Profiles traced from PyTorch"):
- attention is materialised (scores, softmax, dropout in the activation dtype), the causal
  mask is an additive constant, the 1/sqrt(d) scale a scalar: neither is saved;
- grouped-query attention multiplies the queries of one K/V group against the un-repeated K
  and V (queries of the group stacked along the rows), so K and V are saved at kv width;
- RMSNorm is one fused function that saves its input and the per-row 1/rms (as Apex's and
  Transformer Engine's kernels); SwiGLU one fused function that saves the gate and up
  projections and recomputes silu in backward (as Megatron-LM's bias_swiglu).
Parameter names follow Hugging Face's where the structure allows (nn.Linear for GPT-2's Conv1D).
"""
import math

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F


class _FusedRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (x.float() * rstd).to(x.dtype) * weight

    @staticmethod
    def backward(ctx, grad):
        x, weight, rstd = ctx.saved_tensors
        xf = x.float()
        xhat = xf * rstd
        g = grad.float() * weight.float()
        dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        dw = (grad.float() * xhat).reshape(-1, x.shape[-1]).sum(0)
        return dx.to(x.dtype), dw.to(weight.dtype), None


def fused_rms_norm(x, weight, eps: float):
    return _FusedRMSNorm.apply(x, weight, eps)


class _FusedSwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return F.silu(gate) * up

    @staticmethod
    def backward(ctx, grad):
        gate, up = ctx.saved_tensors
        gf = gate.float()
        sig = torch.sigmoid(gf)
        silu = gf * sig
        dgate = grad.float() * up.float() * sig * (1 + gf * (1 - sig))
        dup = grad.float() * silu
        return dgate.to(gate.dtype), dup.to(up.dtype)


def fused_swiglu(gate, up):
    return _FusedSwiGLU.apply(gate, up)


def positions(input_ids):
    """0 .. s-1 for the learned position table (a function, so torch.fx traces it as one node)."""
    return torch.arange(input_ids.shape[1], device=input_ids.device)


# Traced as one call_function node each (torch.fx.wrap), so the fused kernels stay whole.
torch.fx.wrap("fused_rms_norm")
torch.fx.wrap("fused_swiglu")
torch.fx.wrap("positions")


def _causal_mask(n, device, dtype):
    """Additive mask: 0 on and below the diagonal, the dtype's lowest value above."""
    full = torch.full((n, n), torch.finfo(dtype).min, device=device, dtype=dtype)
    return torch.triu(full, diagonal=1)


def _attention(q, k, v, mask, dropout, groups, scale):
    """q: (b, kv, g*s, d) with the g query heads of each K/V head stacked along the rows;
    k, v: (b, kv, s, d). Materialised scores, additive causal mask, softmax, dropout, PV."""
    b, kv, gs = q.size(0), q.size(1), q.size(2)
    s = k.size(2)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    scores = scores.view(b, kv, groups, s, s) + mask
    probs = torch.softmax(scores, dim=-1)
    probs = dropout(probs).view(b, kv, gs, s)
    return torch.matmul(probs, v)


# --- GPT-2 ------------------------------------------------------------------------------

class GPT2Attention(nn.Module):
    def __init__(self, h, heads, n_pos, attn_pdrop, resid_pdrop, device, dtype):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.h, self.heads = h, heads
        self.c_attn = nn.Linear(h, 3 * h, **kw)
        self.c_proj = nn.Linear(h, h, **kw)
        self.attn_dropout = nn.Dropout(attn_pdrop)
        self.resid_dropout = nn.Dropout(resid_pdrop)
        self.register_buffer("mask", _causal_mask(n_pos, device, dtype), persistent=False)

    def forward(self, x):
        b, s, h = x.size(0), x.size(1), self.h
        d = h // self.heads
        qkv = self.c_attn(x).split(self.h, dim=2)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).transpose(1, 2)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        o = _attention(q, k, v, self.mask[:s, :s], self.attn_dropout, 1, 1.0 / math.sqrt(self.h // self.heads))
        o = o.transpose(1, 2).reshape(b, s, h)
        return self.resid_dropout(self.c_proj(o))


class GPT2MLP(nn.Module):
    def __init__(self, h, inner, resid_pdrop, device, dtype):
        super().__init__()
        self.c_fc = nn.Linear(h, inner, device=device, dtype=dtype)
        self.c_proj = nn.Linear(inner, h, device=device, dtype=dtype)
        self.dropout = nn.Dropout(resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class GPT2Block(nn.Module):
    def __init__(self, c, device, dtype):
        super().__init__()
        h = c["n_embd"]
        self.ln_1 = nn.LayerNorm(h, eps=c["layer_norm_epsilon"], device=device, dtype=dtype)
        self.attn = GPT2Attention(h, c["n_head"], c["n_positions"], c["attn_pdrop"], c["resid_pdrop"],
                                  device, dtype)
        self.ln_2 = nn.LayerNorm(h, eps=c["layer_norm_epsilon"], device=device, dtype=dtype)
        self.mlp = GPT2MLP(h, c["n_inner"], c["resid_pdrop"], device, dtype)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2LM(nn.Module):
    """GPT-2 (pre-LN, learned positions, GeLU-tanh MLP, biases, tied output embedding)."""

    def __init__(self, config, device="meta", dtype=torch.bfloat16):
        super().__init__()
        c = config
        h = c["n_embd"]
        self.wte = nn.Embedding(c["vocab_size"], h, device=device, dtype=dtype)
        self.wpe = nn.Embedding(c["n_positions"], h, device=device, dtype=dtype)
        self.drop = nn.Dropout(c["embd_pdrop"])
        self.h = nn.ModuleList([GPT2Block(c, device, dtype) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(h, eps=c["layer_norm_epsilon"], device=device, dtype=dtype)
        self.tied = c["tie_word_embeddings"]
        if not self.tied:
            self.lm_head = nn.Linear(h, c["vocab_size"], bias=False, device=device, dtype=dtype)

    def forward(self, input_ids, labels):
        x = self.drop(self.wte(input_ids) + self.wpe(positions(input_ids)))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = F.linear(x, self.wte.weight) if self.tied else self.lm_head(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


# --- Llama ------------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, h, eps, device, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h, device=device, dtype=dtype))
        self.eps = eps

    def forward(self, x):
        return fused_rms_norm(x, self.weight, self.eps)


def _rotate_half(x):
    half = x.size(-1) // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, c, device, dtype):
        super().__init__()
        h, a, kv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        d = h // a
        kw = dict(bias=c["attention_bias"], device=device, dtype=dtype)
        self.heads, self.kv_heads, self.head_dim = a, kv, d
        self.q_proj = nn.Linear(h, a * d, **kw)
        self.k_proj = nn.Linear(h, kv * d, **kw)
        self.v_proj = nn.Linear(h, kv * d, **kw)
        self.o_proj = nn.Linear(a * d, h, **kw)
        self.attn_dropout = nn.Dropout(c["attention_dropout"])
        n = c["max_position_embeddings"]
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        freqs = torch.outer(torch.arange(n, dtype=torch.float32), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos().to(device=device, dtype=dtype), persistent=False)
        self.register_buffer("sin", emb.sin().to(device=device, dtype=dtype), persistent=False)
        self.register_buffer("mask", _causal_mask(n, device, dtype), persistent=False)

    def forward(self, x):
        b, s = x.size(0), x.size(1)
        a, kv, d = self.heads, self.kv_heads, self.head_dim
        g = a // kv
        q = self.q_proj(x).view(b, s, a, d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, kv, d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, kv, d).transpose(1, 2)
        cos, sin = self.cos[:s], self.sin[:s]
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        q = q.reshape(b, kv, g * s, d)
        o = _attention(q, k, v, self.mask[:s, :s], self.attn_dropout, g, 1.0 / math.sqrt(self.head_dim))
        o = o.view(b, a, s, d).transpose(1, 2).reshape(b, s, a * d)
        return self.o_proj(o)


class LlamaMLP(nn.Module):
    def __init__(self, c, device, dtype):
        super().__init__()
        h, f = c["hidden_size"], c["intermediate_size"]
        kw = dict(bias=c["mlp_bias"], device=device, dtype=dtype)
        self.gate_proj = nn.Linear(h, f, **kw)
        self.up_proj = nn.Linear(h, f, **kw)
        self.down_proj = nn.Linear(f, h, **kw)

    def forward(self, x):
        return self.down_proj(fused_swiglu(self.gate_proj(x), self.up_proj(x)))


class LlamaBlock(nn.Module):
    def __init__(self, c, device, dtype):
        super().__init__()
        h, eps = c["hidden_size"], c["rms_norm_eps"]
        self.input_layernorm = RMSNorm(h, eps, device, dtype)
        self.self_attn = LlamaAttention(c, device, dtype)
        self.post_attention_layernorm = RMSNorm(h, eps, device, dtype)
        self.mlp = LlamaMLP(c, device, dtype)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaLM(nn.Module):
    """Llama / Mistral (RMSNorm, rotary positions, SwiGLU, no biases, grouped-query attention)."""

    def __init__(self, config, device="meta", dtype=torch.bfloat16):
        super().__init__()
        c = config
        h, v = c["hidden_size"], c["vocab_size"]
        self.embed_tokens = nn.Embedding(v, h, device=device, dtype=dtype)
        self.layers = nn.ModuleList([LlamaBlock(c, device, dtype) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(h, c["rms_norm_eps"], device, dtype)
        self.tied = c["tie_word_embeddings"]
        if not self.tied:
            self.lm_head = nn.Linear(h, v, bias=False, device=device, dtype=dtype)

    def forward(self, input_ids, labels):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)
        logits = F.linear(x, self.embed_tokens.weight) if self.tied else self.lm_head(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


# --- Hugging Face config.json -> reference module -----------------------------------------

class ConfigError(Exception):
    """A config.json that does not describe a supported model (message without the file name)."""


def _get(cfg, key, kind, default=None, required=False):
    if key not in cfg or cfg[key] is None:
        if required:
            raise ConfigError("missing key '%s'" % key)
        return default
    value = cfg[key]
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError("'%s' must be a positive integer, found %s" % (key, json_repr(value)))
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError("'%s' must be a non-negative number, found %s" % (key, json_repr(value)))
        value = float(value)
    elif kind is bool:
        if not isinstance(value, bool):
            raise ConfigError("'%s' must be true or false, found %s" % (key, json_repr(value)))
    return value


def json_repr(value):
    import json
    return json.dumps(value)


GPT2_TYPES = ("gpt2",)
LLAMA_TYPES = ("llama", "mistral")


def model_from_hf_config(cfg, device, dtype):
    """(module, description dict) for a parsed config.json; raises ConfigError."""
    if not isinstance(cfg, dict):
        raise ConfigError("expected a JSON object")
    model_type = cfg.get("model_type")
    if model_type in GPT2_TYPES:
        h = _get(cfg, "n_embd", int, required=True)
        heads = _get(cfg, "n_head", int, required=True)
        c = {
            "n_embd": h, "n_head": heads,
            "n_layer": _get(cfg, "n_layer", int, required=True),
            "vocab_size": _get(cfg, "vocab_size", int, required=True),
            "n_positions": _get(cfg, "n_positions", int, _get(cfg, "n_ctx", int, 1024)),
            "n_inner": _get(cfg, "n_inner", int, 4 * h),
            "attn_pdrop": _get(cfg, "attn_pdrop", float, 0.1),
            "resid_pdrop": _get(cfg, "resid_pdrop", float, 0.1),
            "embd_pdrop": _get(cfg, "embd_pdrop", float, 0.1),
            "layer_norm_epsilon": _get(cfg, "layer_norm_epsilon", float, 1e-5),
            "tie_word_embeddings": _get(cfg, "tie_word_embeddings", bool, True),
        }
        if h % heads:
            raise ConfigError("n_head (%d) must divide n_embd (%d)" % (heads, h))
        act = cfg.get("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu", "gelu_pytorch_tanh", "gelu_fast"):
            raise ConfigError("activation_function '%s' is not supported (GeLU only)" % act)
        info = {"family": "gpt", "hidden": h, "heads": heads, "kv_heads": heads,
                "vocab": c["vocab_size"], "max_positions": c["n_positions"]}
        return GPT2LM(c, device=device, dtype=dtype), info
    if model_type in LLAMA_TYPES:
        h = _get(cfg, "hidden_size", int, required=True)
        heads = _get(cfg, "num_attention_heads", int, required=True)
        c = {
            "hidden_size": h, "num_attention_heads": heads,
            "num_hidden_layers": _get(cfg, "num_hidden_layers", int, required=True),
            "num_key_value_heads": _get(cfg, "num_key_value_heads", int, heads),
            "intermediate_size": _get(cfg, "intermediate_size", int, required=True),
            "vocab_size": _get(cfg, "vocab_size", int, required=True),
            "max_position_embeddings": _get(cfg, "max_position_embeddings", int, 4096),
            "rms_norm_eps": _get(cfg, "rms_norm_eps", float, 1e-6),
            "rope_theta": _get(cfg, "rope_theta", float, 10000.0),
            "attention_bias": _get(cfg, "attention_bias", bool, False),
            "mlp_bias": _get(cfg, "mlp_bias", bool, False),
            "attention_dropout": _get(cfg, "attention_dropout", float, 0.0),
            "tie_word_embeddings": _get(cfg, "tie_word_embeddings", bool, False),
        }
        if h % heads:
            raise ConfigError("num_attention_heads (%d) must divide hidden_size (%d)" % (heads, h))
        if heads % c["num_key_value_heads"]:
            raise ConfigError("num_key_value_heads (%d) must divide num_attention_heads (%d)"
                              % (c["num_key_value_heads"], heads))
        head_dim = cfg.get("head_dim")
        if head_dim is not None and head_dim != h // heads:
            raise ConfigError("head_dim (%s) must equal hidden_size / num_attention_heads (%d)"
                              % (json_repr(head_dim), h // heads))
        act = cfg.get("hidden_act", "silu")
        if act != "silu":
            raise ConfigError("hidden_act '%s' is not supported (silu only)" % act)
        info = {"family": "llama", "hidden": h, "heads": heads, "kv_heads": c["num_key_value_heads"],
                "vocab": c["vocab_size"], "max_positions": c["max_position_embeddings"]}
        return LlamaLM(c, device=device, dtype=dtype), info
    raise ConfigError("model_type %s is not supported (supported: %s)"
                      % (json_repr(model_type), ", ".join(GPT2_TYPES + LLAMA_TYPES)))
