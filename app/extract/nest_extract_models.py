"""Reference PyTorch modules for nest-extract --hf-config (plain PyTorch, written in this project).

One module per Hugging Face model_type that core's importer reads (core/formats/HfConfigImport.cpp):
GPT2LM for gpt2; BertLM for bert (BertForPreTraining: masked-LM and next-sentence heads);
DecoderLM for every decoder-only family, a stack of layers each with its own kind:

- mixer: grouped-query attention (Q/K/V biases, Q/K norms, a head width of its own, rotary on
  all or part of the head, a sliding window, learned attention sinks, logit soft-capping),
  multi-head latent attention (MLA: q/kv LoRA ranks, rope/nope/v head widths), or a Mamba-2
  mixer (in_proj, causal depthwise conv1d, the SSD scan, gated RMSNorm, out_proj);
- MLP: dense (SwiGLU, GeGLU, GeLU, squared ReLU) or mixture of experts (top-k routing by
  softmax or sigmoid, group-limited, with the router's bias or correction bias, routed
  scaling, shared experts with their own width and an optional sigmoid gate);
- norms before each sublayer, one norm for attention and MLP in parallel, two norms in
  parallel (GPT-NeoX), or before and after each sublayer (Gemma 2/3);
- DeepSeek-V3's multi-token-prediction modules; multimodal configs' text_config.

Every module takes forward(input_ids, labels) and returns the mean cross-entropy loss in FP32.

They are written as a training stack runs them, because nest-extract counts what autograd
saves for backward (docs/formats.md, "Profiles traced from PyTorch"):
- attention is either materialised (scores, softmax, dropout in the activation type; an
  additive mask and a scalar scale, neither saved; the queries of a K/V group stacked along
  the rows so that K and V are saved at kv width) or, with attention="flash", one fused
  function that saves Q, K, V, its output and the FP32 logsumexp per row and head
  (FlashAttention-2), with the window, sinks, soft-cap and dropout inside it;
- RMSNorm is one fused function that saves its input and the per-row 1/rms (Apex, Transformer
  Engine); SwiGLU / GeGLU one fused function that saves the gate and up projections
  (Megatron-LM's bias_swiglu);
- experts run as grouped GEMMs over stacked weights (E x h x f) on tokens permuted by expert
  (Transformer Engine's moe_permute / moe_unpermute: a row map, the routing weights and, for
  the weighted combine, the expert outputs are saved), at balanced load: each expert gets
  T*k/E rows;
- the Mamba-2 conv (with its SiLU), SSD scan and gated norm are fused functions (mamba_ssm's
  causal_conv1d_fn, mamba_chunk_scan_combined, RMSNormGated) that save their inputs and
  recompute in backward; the scan is written here in plain torch ops (the chunked SSD
  algorithm of Dao & Gu 2024, Sec. 6).
Fused functions carry nest_flops(*shapes) for their model FLOPs (nest-extract reads it).
Parameter names follow Hugging Face's where the structure allows; fused Q/K/V and gate/up
matrices are kept separate (the same parameters). Parameter counts equal
tests/hf/hf_param_count.py's (BERT: with the pre-training heads, as core counts it).
"""
import math

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F


# --- fused functions ----------------------------------------------------------------------

def _recompute(ctx, math_fn, inputs, consts, grad_outputs):
    """Gradients of math_fn(*inputs, *consts) by recomputing it (a fused kernel's backward)."""
    with torch.enable_grad():
        leaves = []
        for i, t in enumerate(inputs):
            if isinstance(t, torch.Tensor):
                t = t.detach().requires_grad_(bool(ctx.needs_input_grad[i]))
            leaves.append(t)
        outs = math_fn(*leaves, *consts)
        outs = outs if isinstance(outs, tuple) else (outs,)
        wanted = [i for i, t in enumerate(leaves) if isinstance(t, torch.Tensor) and t.requires_grad]
        pairs = [(o, g) for o, g in zip(outs, grad_outputs) if g is not None and o.requires_grad]
        got = torch.autograd.grad([o for o, _ in pairs], [leaves[i] for i in wanted],
                                  [g for _, g in pairs], allow_unused=True) if wanted and pairs else []
    grads = [None] * (len(inputs) + len(consts))
    for i, g in zip(wanted, got):
        grads[i] = g
    return tuple(grads)


class _FusedRMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps, plus_one):
        rstd = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        ctx.plus_one = plus_one
        w = weight.float() + 1.0 if plus_one else weight
        return ((x.float() * rstd) * w).to(x.dtype) if plus_one else (x.float() * rstd).to(x.dtype) * weight

    @staticmethod
    def backward(ctx, grad):
        x, weight, rstd = ctx.saved_tensors
        xf = x.float()
        xhat = xf * rstd
        w = weight.float() + (1.0 if ctx.plus_one else 0.0)
        g = grad.float() * w
        dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        dw = (grad.float() * xhat).reshape(-1, x.shape[-1]).sum(0)
        return dx.to(x.dtype), dw.to(weight.dtype), None, None


def fused_rms_norm(x, weight, eps: float, plus_one: bool = False):
    return _FusedRMSNorm.apply(x, weight, eps, plus_one)


class _FusedGatedMLP(torch.autograd.Function):
    """act(gate) * up, saving gate and up (the activation is recomputed in backward)."""

    @staticmethod
    def forward(ctx, gate, up, act):
        ctx.save_for_backward(gate, up)
        ctx.act = act
        return _gated_math(gate, up, act)

    @staticmethod
    def backward(ctx, grad):
        gate, up = ctx.saved_tensors
        return _recompute(ctx, _gated_math, (gate, up), (ctx.act,), (grad,))


def _gated_math(gate, up, act):
    if act == "silu":
        return F.silu(gate) * up
    return F.gelu(gate, approximate="tanh") * up


def fused_swiglu(gate, up):
    return _FusedGatedMLP.apply(gate, up, "silu")


def fused_geglu(gate, up):
    return _FusedGatedMLP.apply(gate, up, "gelu")


def positions(input_ids):
    """0 .. s-1 for the learned position table (a function, so torch.fx traces it as one node)."""
    return torch.arange(input_ids.shape[1], device=input_ids.device)


def attention_mask(x, window: int, causal: bool):
    """Additive (s, s) mask in x's type: the dtype's lowest value where a query may not see a key
    (above the diagonal when causal, window keys or more behind it)."""
    s = x.shape[1]
    i = torch.arange(s, device=x.device)
    dist = i[:, None] - i[None, :]
    allowed = torch.ones(s, s, dtype=torch.bool, device=x.device)
    if causal:
        allowed = allowed & (dist >= 0)
    if window:
        allowed = allowed & (dist < window)
    zero = torch.zeros(s, s, dtype=x.dtype, device=x.device)
    return zero.masked_fill(~allowed, torch.finfo(x.dtype).min)


def _flash_math(q, k, v, sinks, window, scale, softcap, l2norm, dropout_p, causal):
    """q (b, s, a, dqk), k (b, s, kv, dqk), v (b, s, kv, dv) -> out (b, s, a, dv), lse (b, a, s)."""
    b, s, a, dqk = q.shape
    kv, dv = k.shape[2], v.shape[3]
    g = a // kv
    qt = q.transpose(1, 2).float()
    kt = k.transpose(1, 2)[:, :, None].expand(b, kv, g, s, dqk).reshape(b, a, s, dqk).float()
    vt = v.transpose(1, 2)[:, :, None].expand(b, kv, g, s, dv).reshape(b, a, s, dv).float()
    if l2norm:  # Llama 4's weightless Q/K norm, after rotary
        qt = qt * torch.rsqrt(qt.pow(2).mean(-1, keepdim=True) + 1e-6)
        kt = kt * torch.rsqrt(kt.pow(2).mean(-1, keepdim=True) + 1e-6)
    scores = torch.matmul(qt, kt.transpose(-1, -2)) * scale
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    i = torch.arange(s, device=q.device)
    dist = i[:, None] - i[None, :]
    allowed = torch.ones(s, s, dtype=torch.bool, device=q.device)
    if causal:
        allowed = allowed & (dist >= 0)
    if window:
        allowed = allowed & (dist < window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    if sinks is not None:  # one learned logit per head in the softmax's denominator
        sink = sinks.float().view(1, a, 1, 1).expand(b, a, s, 1)
        scores = torch.cat((scores, sink), dim=-1)
    lse = torch.logsumexp(scores, dim=-1)
    probs = torch.exp(scores - lse[..., None])
    if sinks is not None:
        probs = probs[..., :s]
    if dropout_p > 0:
        probs = F.dropout(probs, dropout_p, True)
    out = torch.matmul(probs, vt).transpose(1, 2).contiguous().to(q.dtype)
    return out, lse


class _FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, sinks, window, scale, softcap, l2norm, dropout_p, causal):
        out, lse = _flash_math(q, k, v, sinks, window, scale, softcap, l2norm, dropout_p, causal)
        ctx.save_for_backward(q, k, v, sinks, out, lse)
        ctx.consts = (window, scale, softcap, l2norm, dropout_p, causal)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, sinks, _, _ = ctx.saved_tensors
        return _recompute(ctx, _flash_math, (q, k, v, sinks), ctx.consts, (grad, None))


def flash_attention(q, k, v, sinks, window: int, scale: float, softcap: float, l2norm: bool,
                    dropout_p: float, causal: bool):
    """Fused attention (FlashAttention-2's memory: Q, K, V, output and the FP32 logsumexp)."""
    return _FlashAttention.apply(q, k, v, sinks, window, scale, softcap, l2norm, dropout_p, causal)


def _flash_flops(q, k, v, sinks, window, *rest):
    """Model FLOPs: QK^T and PV over the keys each query sees (all s, or the window)."""
    b, s, a, dqk = q
    keys = min(window, s) if window else s
    return "attention", 2.0 * b * a * s * keys * (dqk + v[3])


flash_attention.nest_flops = _flash_flops


def _conv_math(x, weight, bias):
    s, kernel = x.shape[1], weight.shape[-1]
    out = F.conv1d(x.transpose(1, 2), weight, bias, padding=kernel - 1, groups=x.shape[2])[..., :s]
    return F.silu(out).transpose(1, 2).contiguous()


class _CausalConv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight, bias)
        return _conv_math(x, weight, bias)

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias = ctx.saved_tensors
        return _recompute(ctx, _conv_math, (x, weight, bias), (), (grad,))


def causal_conv1d(x, weight, bias):
    """Causal depthwise conv over the sequence and SiLU: x (b, s, c), weight (c, 1, K)."""
    return _CausalConv.apply(x, weight, bias)


causal_conv1d.nest_flops = lambda x, weight, bias: ("attention", 2.0 * x[0] * x[1] * x[2] * weight[-1])


def _segsum(x):
    """(..., T) -> (..., T, T): sum of x over (j, i] for i >= j, -inf above the diagonal."""
    t = x.shape[-1]
    xe = x[..., None].expand(*x.shape, t)
    below = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=-1)
    sums = torch.cumsum(xe.masked_fill(~below, 0.0), dim=-2)
    keep = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=0)
    return sums.masked_fill(~keep, float("-inf"))


def _ssd_math(x, dt, a_log, bmat, cmat, d, dt_bias, chunk):
    """The chunked SSD scan (Dao & Gu 2024, Sec. 6): x (b, s, h, p), dt (b, s, h), B and C
    (b, s, g, n) -> y (b, s, h, p). FP32 inside."""
    b, s, h, p = x.shape
    g, n = bmat.shape[2], bmat.shape[3]
    dtype = x.dtype
    xf = x.float()
    dtf = F.softplus(dt.float() + dt_bias.float())
    a = -torch.exp(a_log.float())
    bf = bmat.float()[:, :, :, None].expand(b, s, g, h // g, n).reshape(b, s, h, n)
    cf = cmat.float()[:, :, :, None].expand(b, s, g, h // g, n).reshape(b, s, h, n)
    pad = (-s) % chunk
    xs, adt = xf * dtf[..., None], a * dtf
    if pad:
        xs, bf, cf = (F.pad(t, (0, 0, 0, 0, 0, pad)) for t in (xs, bf, cf))
        adt = F.pad(adt, (0, 0, 0, pad))
    c = (s + pad) // chunk
    xs = xs.reshape(b, c, chunk, h, p)
    bf = bf.reshape(b, c, chunk, h, n)
    cf = cf.reshape(b, c, chunk, h, n)
    adt = adt.reshape(b, c, chunk, h).permute(0, 3, 1, 2)         # (b, h, c, l)
    cum = torch.cumsum(adt, dim=-1)
    decay = torch.exp(_segsum(adt))                                # (b, h, c, l, l)
    scores = torch.einsum("bclhn,bcshn->bhcls", cf, bf) * decay
    y_diag = torch.einsum("bhcls,bcshp->bclhp", scores, xs)
    decay_states = torch.exp(cum[..., -1:] - cum)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", bf, decay_states, xs)
    states = torch.cat((torch.zeros_like(states[:, :1]), states), dim=1)
    decay_chunk = torch.exp(_segsum(F.pad(cum[..., -1], (1, 0))))  # (b, h, c+1, c+1)
    states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)[:, :-1]
    y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", cf, states, torch.exp(cum))
    y = (y_diag + y_off).reshape(b, c * chunk, h, p)[:, :s]
    return (y + xf * d.float()[:, None]).to(dtype).contiguous()


class _SsdScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dt, a_log, bmat, cmat, d, dt_bias, chunk):
        ctx.save_for_backward(x, dt, a_log, bmat, cmat, d, dt_bias)
        ctx.chunk = chunk
        return _ssd_math(x, dt, a_log, bmat, cmat, d, dt_bias, chunk)

    @staticmethod
    def backward(ctx, grad):
        return _recompute(ctx, _ssd_math, ctx.saved_tensors, (ctx.chunk,), (grad,))


def ssd_scan(x, dt, a_log, bmat, cmat, d, dt_bias, chunk: int):
    """Mamba-2's scan (mamba_chunk_scan_combined's memory: its inputs and output)."""
    return _SsdScan.apply(x, dt, a_log, bmat, cmat, d, dt_bias, chunk)


def _ssd_flops(x, dt, a_log, bmat, cmat, d, dt_bias, chunk):
    """Per token and head: intra-chunk C B^T and its product with X, 2Q(N + P); the chunk
    states and their output, 4NP (core's mambaScanFlops)."""
    b, s, h, p = x
    n = bmat[3]
    return "attention", float(b * s * h * (2 * chunk * (n + p) + 4 * n * p))


ssd_scan.nest_flops = _ssd_flops
ssd_scan.nest_layer_kind = "mamba"  # nest-extract: a block that runs it is a Mamba layer


def _gated_norm_math(y, z, weight, groups, eps):
    b, s, inner = y.shape
    x = (y.float() * F.silu(z.float())).view(b, s, groups, inner // groups)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return (x.view(b, s, inner) * weight.float()).to(y.dtype)


class _GatedRmsNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y, z, weight, groups, eps):
        b, s, inner = y.shape
        x = (y.float() * F.silu(z.float())).view(b, s, groups, inner // groups)
        rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(y, z, weight, rstd)
        ctx.consts = (groups, eps)
        return _gated_norm_math(y, z, weight, groups, eps)

    @staticmethod
    def backward(ctx, grad):
        y, z, weight, _ = ctx.saved_tensors
        return _recompute(ctx, _gated_norm_math, (y, z, weight), ctx.consts, (grad,))


def gated_rms_norm(y, z, weight, groups: int, eps: float):
    """RMSNorm(y * silu(z)) per group of channels (Mamba-2's RMSNormGated)."""
    return _GatedRmsNorm.apply(y, z, weight, groups, eps)


class _MoePermute(torch.autograd.Function):
    """Token rows in expert order, padded to E x C rows (C = ceil(T*k / E)); optionally scaled
    by their routing weights (Llama 4). Saves an int32 row map (and x and the weights when
    scaling)."""

    @staticmethod
    def forward(ctx, x, order, k, experts, probs):
        tk, h = order.shape[0], x.shape[1]
        cap = -(-tk // experts)
        rows = x[order // k]
        if probs is not None:
            rows = rows * probs.reshape(-1)[order].to(x.dtype)[:, None]
        rows = F.pad(rows, (0, 0, 0, experts * cap - tk))
        row_map = order.to(torch.int32)
        ctx.save_for_backward(row_map, x if probs is not None else None, probs)
        ctx.k, ctx.tokens = k, x.shape[0]
        return rows.view(experts, cap, h)

    @staticmethod
    def backward(ctx, grad):
        row_map, x, probs = ctx.saved_tensors
        order = row_map.long()
        tokens = order // ctx.k
        h = grad.shape[-1]
        g = grad.reshape(-1, h)[:order.shape[0]]
        grad_probs = None
        if probs is not None:
            sorted_grad = (g.float() * x[tokens].float()).sum(-1)
            grad_probs = torch.zeros(order.shape[0], device=g.device, dtype=sorted_grad.dtype)
            grad_probs = grad_probs.index_copy(0, order, sorted_grad).view_as(probs).to(probs.dtype)
            g = g * probs.reshape(-1)[order].to(g.dtype)[:, None]
        grad_x = torch.zeros(ctx.tokens, h, device=g.device, dtype=g.dtype).index_add(0, tokens, g)
        return grad_x, None, None, None, grad_probs


def moe_permute(x, order, k: int, experts: int, probs=None):
    return _MoePermute.apply(x, order, k, experts, probs)


class _MoeUnpermute(torch.autograd.Function):
    """Expert output rows back in token order, summed over each token's k experts, weighted by
    the routing weights when given. Saves the row map, and the expert outputs and weights for
    the weighted combine."""

    @staticmethod
    def forward(ctx, y, order, k, probs):
        tk, h = order.shape[0], y.shape[-1]
        rows = torch.zeros(tk, h, device=y.device, dtype=y.dtype).index_copy(0, order, y.reshape(-1, h)[:tk])
        rows = rows.view(tk // k, k, h)
        out = (rows * probs.to(y.dtype)[..., None]).sum(1) if probs is not None else rows.sum(1)
        ctx.save_for_backward(order.to(torch.int32), y if probs is not None else None, probs)
        ctx.k, ctx.shape = k, y.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        row_map, y, probs = ctx.saved_tensors
        order = row_map.long()
        tk, h, k = order.shape[0], grad.shape[-1], ctx.k
        g = grad[:, None, :].expand(tk // k, k, h)
        grad_probs = None
        if probs is not None:
            rows = torch.zeros(tk, h, device=y.device, dtype=y.dtype).index_copy(0, order, y.reshape(-1, h)[:tk])
            grad_probs = (grad[:, None, :].float() * rows.view(tk // k, k, h).float()).sum(-1).to(probs.dtype)
            g = g * probs.to(grad.dtype)[..., None]
        sorted_rows = g.reshape(tk, h)[order]
        grad_y = F.pad(sorted_rows, (0, 0, 0, ctx.shape[0] * ctx.shape[1] - tk)).view(ctx.shape)
        return grad_y, None, None, grad_probs


def moe_unpermute(y, order, k: int, probs=None):
    return _MoeUnpermute.apply(y, order, k, probs)


moe_permute.nest_flops = lambda *args: ("none", 0.0)
moe_unpermute.nest_flops = lambda *args: ("none", 0.0)
# nest-extract: expert parallelism's all-to-all moves the dispatched rows and the expert outputs.
moe_permute.nest_alltoall = "output"
moe_unpermute.nest_alltoall = "input"


class _SoftcapCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of cap * tanh(logits / cap), FP32; as fused kernels do (Megatron-LM's
    vocab-parallel loss, Liger), the gradient is formed in forward and kept (one FP32 s x V)."""

    @staticmethod
    def forward(ctx, logits, labels, cap):
        z = logits.float()
        t = torch.tanh(z / cap)
        capped = t * cap
        lse = torch.logsumexp(capped, dim=-1)
        n = labels.numel()
        loss = (lse - capped.gather(-1, labels[:, None])[:, 0]).mean()
        grad = torch.exp(capped - lse[:, None])
        grad = grad.scatter_add(-1, labels[:, None], torch.full_like(grad[:, :1], -1.0))
        grad = grad * (1 - t * t) / n
        ctx.save_for_backward(grad)
        ctx.dtype = logits.dtype
        return loss

    @staticmethod
    def backward(ctx, g):
        (grad,) = ctx.saved_tensors
        return (grad * g).to(ctx.dtype), None, None


def softcap_cross_entropy(logits, labels, cap: float):
    return _SoftcapCrossEntropy.apply(logits, labels, cap)


# Traced as one call_function node each (torch.fx.wrap), so the fused kernels stay whole.
for _name in ("fused_rms_norm", "fused_swiglu", "fused_geglu", "positions", "attention_mask",
              "flash_attention", "causal_conv1d", "ssd_scan", "gated_rms_norm", "moe_permute",
              "moe_unpermute", "softcap_cross_entropy"):
    torch.fx.wrap(_name)


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


# --- the generic decoder's parts ----------------------------------------------------------

class RMSNorm(nn.Module):
    """Fused RMSNorm; plus_one: Gemma's (1 + weight), the weight starting at zero."""

    def __init__(self, h, eps, device, dtype, plus_one=False):
        super().__init__()
        init = torch.zeros if plus_one else torch.ones
        self.weight = nn.Parameter(init(h, device=device, dtype=dtype))
        self.eps, self.plus_one = eps, plus_one

    def forward(self, x):
        return fused_rms_norm(x, self.weight, self.eps, self.plus_one)


def make_norm(S, width, device, dtype):
    if S["norm"] == "layer":
        return nn.LayerNorm(width, eps=S["eps"], device=device, dtype=dtype)
    return RMSNorm(width, S["eps"], device, dtype, plus_one=S["norm"] == "rms1p")


def _rotate_half(x):
    half = x.size(-1) // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rope(x, table):
    """Rotary on the first rot channels of each head: x (b, s, heads, d); cos, sin (s, 1, rot)."""
    cos, sin = table
    rot = cos.shape[-1]
    if rot == x.shape[-1]:
        return x * cos + _rotate_half(x) * sin
    xr = x[..., :rot]
    return torch.cat((xr * cos + _rotate_half(xr) * sin, x[..., rot:]), dim=-1)


def _linear(n_in, n_out, bias, device, dtype):
    return nn.Linear(n_in, n_out, bias=bias, device=device, dtype=dtype)


def _attend(S, layer, q, k, v, sinks, l2norm, scale, dropout):
    """Attention of q (b, s, a, dqk) on k (b, s, kv, dqk) and v (b, s, kv, dv) as the
    configured kernel runs it; returns (b, s, a * dv)."""
    b, s, a, dqk = q.shape
    kv, dv = k.shape[2], v.shape[3]
    window = layer["window"]
    if S["attention"] == "flash":
        out = flash_attention(q, k, v, sinks, window, scale, S["softcap"], l2norm,
                              S["attn_p"] if dropout.training else 0.0, S["causal"])
        return out.view(b, s, a * dv)
    g = a // kv
    qt = q.transpose(1, 2).reshape(b, kv, g * s, dqk)
    kt = k.transpose(1, 2)
    vt = v.transpose(1, 2)
    if l2norm:
        qt = qt * torch.rsqrt(qt.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(qt.dtype)
        kt = kt * torch.rsqrt(kt.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(kt.dtype)
    scores = torch.matmul(qt, kt.transpose(-1, -2)) * scale
    if S["softcap"]:
        scores = torch.tanh(scores / S["softcap"]) * S["softcap"]
    scores = scores.view(b, kv, g, s, s) + attention_mask(q, window, S["causal"])
    if sinks is not None:
        sink = sinks.view(1, kv, g, 1, 1).expand(b, kv, g, s, 1).to(scores.dtype)
        probs = torch.softmax(torch.cat((scores, sink), dim=-1), dim=-1)[..., :s]
    else:
        probs = torch.softmax(scores, dim=-1)
    if S["attn_p"] > 0:
        probs = dropout(probs)
    out = torch.matmul(probs.reshape(b, kv, g * s, s), vt)
    return out.view(b, a, s, dv).transpose(1, 2).reshape(b, s, a * dv)


class Attention(nn.Module):
    """Grouped-query attention: Q/K/V (biases), optional per-head Q/K norms, rotary on the
    first rotary_dim channels of each head, a window, sinks, soft-capping."""

    def __init__(self, S, layer, device, dtype):
        super().__init__()
        h, a, kv, d = S["hidden"], S["heads"], S["kv_heads"], S["head_dim"]
        self.S, self.layer = S, layer
        self.q_proj = _linear(h, a * d, S["q_bias"], device, dtype)
        self.k_proj = _linear(h, kv * d, S["kv_bias"], device, dtype)
        self.v_proj = _linear(h, kv * d, S["kv_bias"], device, dtype)
        self.o_proj = _linear(a * d, h, S["o_bias"], device, dtype)
        if S["qk_norm"] in ("rms", "rms1p", "layer"):
            norm_s = dict(S, norm="layer" if S["qk_norm"] == "layer" else S["qk_norm"])
            self.q_norm = make_norm(norm_s, d, device, dtype)
            self.k_norm = make_norm(norm_s, d, device, dtype)
        if S["sinks"]:
            self.sinks = nn.Parameter(torch.zeros(a, device=device, dtype=dtype))
        self.attn_dropout = nn.Dropout(S["attn_p"])

    def forward(self, x, rope):
        S, layer = self.S, self.layer
        b, s = x.shape[0], x.shape[1]
        a, kv, d = S["heads"], S["kv_heads"], S["head_dim"]
        q = self.q_proj(x).view(b, s, a, d)
        k = self.k_proj(x).view(b, s, kv, d)
        v = self.v_proj(x).view(b, s, kv, d)
        if S["qk_norm"] in ("rms", "rms1p", "layer"):
            q, k = self.q_norm(q), self.k_norm(k)
        if layer["rope"] and S["rotary_dim"]:
            q, k = _rope(q, rope[layer["rope"]]), _rope(k, rope[layer["rope"]])
        l2norm = S["qk_norm"] == "l2" and bool(layer["rope"])
        sinks = self.sinks if S["sinks"] else None
        o = _attend(S, layer, q, k, v, sinks, l2norm, S["scale"], self.attn_dropout)
        return self.o_proj(o)


class MLAttention(nn.Module):
    """Multi-head latent attention (DeepSeek-V2/V3): Q through a LoRA (q_a_proj, its norm,
    q_b_proj) or directly (q_proj); K and V from one compressed latent (kv_a_proj_with_mqa, its
    norm, kv_b_proj) plus a rotary key shared by the heads; o_proj."""

    def __init__(self, S, layer, device, dtype):
        super().__init__()
        h, a = S["hidden"], S["heads"]
        m = S["mla"]
        self.S, self.layer, self.m = S, layer, m
        qk = m["nope"] + m["rope"]
        if m["q_lora"]:
            self.q_a_proj = _linear(h, m["q_lora"], S["q_bias"], device, dtype)
            self.q_a_layernorm = RMSNorm(m["q_lora"], S["eps"], device, dtype)
            self.q_b_proj = _linear(m["q_lora"], a * qk, False, device, dtype)
        else:
            self.q_proj = _linear(h, a * qk, False, device, dtype)
        self.kv_a_proj_with_mqa = _linear(h, m["kv_lora"] + m["rope"], S["q_bias"], device, dtype)
        self.kv_a_layernorm = RMSNorm(m["kv_lora"], S["eps"], device, dtype)
        self.kv_b_proj = _linear(m["kv_lora"], a * (m["nope"] + m["v"]), False, device, dtype)
        self.o_proj = _linear(a * m["v"], h, S["o_bias"], device, dtype)
        self.attn_dropout = nn.Dropout(S["attn_p"])

    def forward(self, x, rope):
        S, m = self.S, self.m
        b, s = x.shape[0], x.shape[1]
        a, nope, r, vd, kvl = S["heads"], m["nope"], m["rope"], m["v"], m["kv_lora"]
        if m["q_lora"]:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        else:
            q = self.q_proj(x)
        q = q.view(b, s, a, nope + r)
        latent = self.kv_a_proj_with_mqa(x)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent[..., :kvl])).view(b, s, a, nope + vd)
        table = rope[self.layer["rope"]]
        q_pe = _rope(q[..., nope:], table)
        k_pe = _rope(latent[..., kvl:].view(b, s, 1, r), table).expand(b, s, a, r)
        query = torch.cat((q[..., :nope], q_pe), dim=-1)
        key = torch.cat((kv[..., :nope], k_pe), dim=-1)
        value = kv[..., nope:].contiguous()
        o = _attend(S, self.layer, query, key, value, None, False, S["scale"], self.attn_dropout)
        return self.o_proj(o)


class Mamba2Mixer(nn.Module):
    """Mamba-2 (NemotronH's NemotronHMamba2Mixer): in_proj to (z, x B C, dt), the causal
    depthwise conv and SiLU on x B C, the SSD scan, RMSNorm(y * silu(z)) per group, out_proj."""

    def __init__(self, S, device, dtype):
        super().__init__()
        M = S["mamba"]
        self.S, self.M = S, M
        h = S["hidden"]
        inner = M["heads"] * M["head_dim"]
        conv = inner + 2 * M["groups"] * M["state"]
        self.in_proj = _linear(h, inner + conv + M["heads"], M["bias"], device, dtype)
        self.conv1d = nn.Conv1d(conv, conv, M["conv"], groups=conv, bias=M["conv_bias"], device=device, dtype=dtype)
        self.dt_bias = nn.Parameter(torch.ones(M["heads"], device=device, dtype=dtype))
        self.A_log = nn.Parameter(torch.zeros(M["heads"], device=device, dtype=dtype))
        self.D = nn.Parameter(torch.ones(M["heads"], device=device, dtype=dtype))
        self.norm_weight = nn.Parameter(torch.ones(inner, device=device, dtype=dtype))
        self.out_proj = _linear(inner, h, M["bias"], device, dtype)

    def forward(self, x, rope):
        M = self.M
        b, s = x.shape[0], x.shape[1]
        nh, p, g, n = M["heads"], M["head_dim"], M["groups"], M["state"]
        inner = nh * p
        conv = inner + 2 * g * n
        zxbcdt = self.in_proj(x)
        z = zxbcdt[..., :inner]
        xbc = causal_conv1d(zxbcdt[..., inner:inner + conv], self.conv1d.weight, self.conv1d.bias)
        dt = zxbcdt[..., inner + conv:]
        y = ssd_scan(xbc[..., :inner].view(b, s, nh, p), dt, self.A_log,
                     xbc[..., inner:inner + g * n].view(b, s, g, n), xbc[..., inner + g * n:].view(b, s, g, n),
                     self.D, self.dt_bias, M["chunk"])
        y = gated_rms_norm(y.view(b, s, inner), z, self.norm_weight, g, self.S["eps"])
        return self.out_proj(y)


def _activate(act, x):
    if act == "relu2":
        return torch.square(F.relu(x))
    if act == "relu":
        return F.relu(x)
    if act == "silu":
        return F.silu(x)
    return F.gelu(x, approximate="tanh" if act == "gelu_tanh" else "none")


class MLP(nn.Module):
    """Gated (SwiGLU / GeGLU: gate_proj, up_proj, down_proj) or plain (up_proj, act, down_proj)."""

    def __init__(self, S, width, device, dtype, bias=None):
        super().__init__()
        h = S["hidden"]
        bias = S["mlp_bias"] if bias is None else bias
        self.act = S["act"]
        if self.act in ("swiglu", "geglu"):
            self.gate_proj = _linear(h, width, bias, device, dtype)
        self.up_proj = _linear(h, width, bias, device, dtype)
        self.down_proj = _linear(width, h, bias, device, dtype)

    def forward(self, x):
        if self.act == "swiglu":
            return self.down_proj(fused_swiglu(self.gate_proj(x), self.up_proj(x)))
        if self.act == "geglu":
            return self.down_proj(fused_geglu(self.gate_proj(x), self.up_proj(x)))
        return self.down_proj(_activate(self.act, self.up_proj(x)))


class Experts(nn.Module):
    """E experts as stacked weights, run as grouped GEMMs (torch.bmm) on E x C token rows."""

    def __init__(self, S, device, dtype):
        super().__init__()
        E, h, f = S["moe"]["experts"], S["hidden"], S["moe"]["width"]
        self.gated = S["moe"]["gated"]
        self.act = S["act"]
        kw = dict(device=device, dtype=dtype)
        if self.gated:
            self.gate_proj = nn.Parameter(torch.empty(E, h, f, **kw))
        self.up_proj = nn.Parameter(torch.empty(E, h, f, **kw))
        self.down_proj = nn.Parameter(torch.empty(E, f, h, **kw))
        self.bias = S["moe"]["expert_bias"]
        if self.bias:
            if self.gated:
                self.gate_proj_bias = nn.Parameter(torch.zeros(E, 1, f, **kw))
            self.up_proj_bias = nn.Parameter(torch.zeros(E, 1, f, **kw))
            self.down_proj_bias = nn.Parameter(torch.zeros(E, 1, h, **kw))
        for p in self.parameters():
            if p.dim() == 3 and p.shape[1] != 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, xs):
        up = torch.bmm(xs, self.up_proj)
        if self.bias:
            up = up + self.up_proj_bias
        if self.gated:
            gate = torch.bmm(xs, self.gate_proj)
            if self.bias:
                gate = gate + self.gate_proj_bias
            hidden = fused_geglu(gate, up) if self.act == "geglu" else fused_swiglu(gate, up)
        else:
            hidden = _activate(self.act, up)
        out = torch.bmm(hidden, self.down_proj)
        if self.bias:
            out = out + self.down_proj_bias
        return out


class Router(nn.Module):
    def __init__(self, S, device, dtype):
        super().__init__()
        mo = S["moe"]
        self.weight = nn.Parameter(torch.empty(mo["experts"], S["hidden"], device=device, dtype=dtype))
        nn.init.normal_(self.weight, std=0.02)
        if mo["router_bias"]:
            self.bias = nn.Parameter(torch.zeros(mo["experts"], device=device, dtype=dtype))
        if mo["correction_bias"]:  # DeepSeek-V3's e_score_correction_bias: updated outside autograd
            self.e_score_correction_bias = nn.Parameter(torch.zeros(mo["experts"], device=device,
                                                                    dtype=torch.float32), requires_grad=False)

    def forward(self, x):
        return F.linear(x, self.weight, getattr(self, "bias", None))


class MoE(nn.Module):
    """Router, top-k selection, permuted grouped GEMMs over the experts, weighted combine;
    shared experts as one MLP of their summed width (with Qwen2-MoE's sigmoid gate)."""

    def __init__(self, S, device, dtype):
        super().__init__()
        self.S, self.mo = S, S["moe"]
        self.gate = Router(S, device, dtype)
        self.experts = Experts(S, device, dtype)
        if self.mo["shared"]:
            self.shared_experts = MLP(S, self.mo["shared"], device, dtype, bias=self.mo["expert_bias"])
        if self.mo["shared_gate"]:
            self.shared_expert_gate = _linear(S["hidden"], 1, False, device, dtype)

    def forward(self, x):
        mo = self.mo
        b, s, h = x.shape
        E, k = mo["experts"], mo["top_k"]
        xf = x.view(b * s, h)
        logits = self.gate(xf)
        scoring = mo["scoring"]
        if scoring in ("softmax", "sigmoid"):
            scores = torch.softmax(logits.float(), dim=-1) if scoring == "softmax" else torch.sigmoid(logits.float())
            choice = scores.detach()
            if mo["correction_bias"]:
                choice = choice + self.gate.e_score_correction_bias
            if mo["groups"] > 1 and mo["topk_groups"] < mo["groups"]:
                per = choice.view(b * s, mo["groups"], E // mo["groups"])
                best = per.topk(min(2, E // mo["groups"]), dim=-1).values.sum(-1) if mo["correction_bias"] \
                    else per.amax(-1)
                keep = torch.zeros_like(best).scatter(1, best.topk(mo["topk_groups"], dim=-1).indices, 1.0)
                choice = (per * keep[..., None]).view(b * s, E)
            idx = choice.topk(k, dim=-1).indices
            weights = scores.gather(-1, idx)
            if mo["norm_topk"]:
                weights = weights / (weights.sum(-1, keepdim=True) + 1e-20)
        else:  # "topk_softmax" (gpt-oss): softmax over the k best logits; "topk_sigmoid" (Llama 4)
            top = logits.topk(k, dim=-1)
            idx = top.indices
            weights = torch.softmax(top.values.float(), dim=-1) if scoring == "topk_softmax" \
                else torch.sigmoid(top.values.float())
        if mo["scale"] != 1.0:
            weights = weights * mo["scale"]
        order = torch.argsort(idx.view(-1))
        if mo["scale_input"]:  # Llama 4: the routing weight scales the expert's input
            y = moe_unpermute(self.experts(moe_permute(xf, order, k, E, weights)), order, k)
        else:
            y = moe_unpermute(self.experts(moe_permute(xf, order, k, E)), order, k, weights)
        if mo["shared"]:
            shared = self.shared_experts(xf)
            if mo["shared_gate"]:
                shared = torch.sigmoid(self.shared_expert_gate(xf)) * shared
            y = y + shared
        return y.view(b, s, h)


class DecoderLayer(nn.Module):
    """One block: a mixer and an MLP (either may be absent) with the configured norms."""

    def __init__(self, S, layer, device, dtype):
        super().__init__()
        self.S, self.layer = S, layer
        place = S["norms"]
        mixer, mlp = layer["mixer"], layer["mlp"]
        any_window = any(x["window"] for x in S["layers"])
        # The layer kind's name (nest-extract writes it as kind_label).
        self.nest_kind_label = "mamba" if mixer == "mamba" else ("moe" if mlp == "moe" else "mlp") if not mixer \
            else "attention" if not mlp else "sliding" if layer["window"] else "global" if any_window \
            else "moe" if mlp == "moe" else "dense"
        if mixer == "attention":
            self.self_attn = Attention(S, layer, device, dtype)
        elif mixer == "mla":
            self.self_attn = MLAttention(S, layer, device, dtype)
        elif mixer == "mamba":
            self.mixer = Mamba2Mixer(S, device, dtype)
        if mlp == "dense":
            self.mlp = MLP(S, layer["ffn"], device, dtype)
        elif mlp == "moe":
            self.mlp = MoE(S, device, dtype)
        self.input_layernorm = make_norm(S, S["hidden"], device, dtype)
        if place in ("pre", "parallel2", "sandwich", "post") and mixer and mlp:
            self.post_attention_layernorm = make_norm(S, S["hidden"], device, dtype)
        if place == "sandwich":
            self.pre_feedforward_layernorm = make_norm(S, S["hidden"], device, dtype)
            self.post_feedforward_layernorm = make_norm(S, S["hidden"], device, dtype)
        self.resid_dropout = nn.Dropout(S["resid_p"])

    def _drop(self, x):
        return self.resid_dropout(x) if self.S["resid_p"] > 0 else x

    def _residual(self, x):
        return x * self.S["residual_scale"] if self.S["residual_scale"] != 1.0 else x

    def _mix(self, x, rope):
        if self.layer["mixer"] == "mamba":
            return self.mixer(x, rope)
        return self.self_attn(x, rope)

    def forward(self, x, rope):
        place = self.S["norms"]
        mixer, mlp = self.layer["mixer"], self.layer["mlp"]
        if not (mixer and mlp):  # NemotronH: one sublayer per block
            n = self.input_layernorm(x)
            return x + self._drop(self._mix(n, rope) if mixer else self.mlp(n))
        if place == "parallel":
            n = self.input_layernorm(x)
            return x + self._drop(self._mix(n, rope)) + self._drop(self.mlp(n))
        if place == "parallel2":
            return x + self._drop(self._mix(self.input_layernorm(x), rope)) + \
                self._drop(self.mlp(self.post_attention_layernorm(x)))
        if place == "post":
            x = self.input_layernorm(x + self._drop(self._mix(x, rope)))
            return self.post_attention_layernorm(x + self._drop(self.mlp(x)))
        if place == "sandwich":
            x = x + self.post_attention_layernorm(self._mix(self.input_layernorm(x), rope))
            return x + self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))
        x = x + self._residual(self._drop(self._mix(self.input_layernorm(x), rope)))
        return x + self._residual(self._drop(self.mlp(self.post_attention_layernorm(x))))


class SharedHead(nn.Module):
    def __init__(self, S, device, dtype):
        super().__init__()
        self.norm = make_norm(S, S["hidden"], device, dtype)


class MTPModule(nn.Module):
    """DeepSeek-V3's multi-token prediction: RMSNorm of the hidden state and of the next token's
    embedding, eh_proj of their concatenation (2h -> h), one decoder layer, shared_head.norm, and
    the main model's embedding and output head."""

    def __init__(self, S, layer, device, dtype):
        super().__init__()
        h = S["hidden"]
        self.enorm = make_norm(S, h, device, dtype)
        self.hnorm = make_norm(S, h, device, dtype)
        self.eh_proj = _linear(2 * h, h, False, device, dtype)
        self.block = DecoderLayer(S, layer, device, dtype)
        self.shared_head = SharedHead(S, device, dtype)

    def forward(self, hidden, input_ids, labels, rope, embed_weight, head_weight):
        nxt = torch.roll(input_ids, -1, 1)
        target = torch.roll(labels, -1, 1)
        e = F.embedding(nxt, embed_weight)
        x = self.eh_proj(torch.cat((self.enorm(e), self.hnorm(hidden)), dim=-1))
        x = self.shared_head.norm(self.block(x, rope))
        logits = F.linear(x, head_weight)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), target.view(-1))


class DecoderLM(nn.Module):
    """A decoder-only language model as a list of layer kinds (see the module's docstring)."""

    def __init__(self, S, device="meta", dtype=torch.bfloat16):
        super().__init__()
        self.S = S
        h, v = S["hidden"], S["vocab"]
        self.embed_tokens = nn.Embedding(v, h, device=device, dtype=dtype)
        self.embed_dropout = nn.Dropout(S["embd_p"])
        self.layers = nn.ModuleList([DecoderLayer(S, layer, device, dtype) for layer in S["layers"]])
        self.mtp = nn.ModuleList([MTPModule(S, S["layers"][-1], device, dtype) for _ in range(S["mtp"])])
        self.norm = make_norm(S, h, device, dtype)
        if not S["tied"]:
            self.lm_head = nn.Linear(h, v, bias=S["head_bias"], device=device, dtype=dtype)
        # Rotary tables (cos, sin per position), one per base, shared by the layers (buffers:
        # slices of them are not activations).
        self.tables = []
        for name, (theta, rot) in S["rope_tables"].items():
            inv = 1.0 / (theta ** (torch.arange(0, rot, 2, dtype=torch.float32) / rot))
            freqs = torch.outer(torch.arange(S["max_positions"], dtype=torch.float32), inv)
            emb = torch.cat((freqs, freqs), dim=-1)
            self.register_buffer(name + "_cos", emb.cos().to(device=device, dtype=dtype), persistent=False)
            self.register_buffer(name + "_sin", emb.sin().to(device=device, dtype=dtype), persistent=False)
            self.tables.append(name)

    def forward(self, input_ids, labels):
        S = self.S
        s = input_ids.shape[1]
        x = self.embed_tokens(input_ids)
        if S["embed_scale"] != 1.0:
            x = x * S["embed_scale"]
        if S["embd_p"] > 0:
            x = self.embed_dropout(x)
        rope = {}
        for name in self.tables:
            cos, sin = getattr(self, name + "_cos"), getattr(self, name + "_sin")
            rope[name] = (cos[:s].view(s, 1, cos.shape[-1]), sin[:s].view(s, 1, sin.shape[-1]))
        for layer in self.layers:
            x = layer(x, rope)
        head_weight = self.embed_tokens.weight if S["tied"] else self.lm_head.weight
        extra = None
        for module in self.mtp:
            loss = module(x, input_ids, labels, rope, self.embed_tokens.weight, head_weight)
            extra = loss if extra is None else extra + loss
        x = self.norm(x)
        if S["logit_scale"] != 1.0:
            x = x * S["logit_scale"]
        logits = F.linear(x, self.embed_tokens.weight) if S["tied"] else self.lm_head(x)
        if S["final_softcap"]:
            loss = softcap_cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), S["final_softcap"])
        else:
            loss = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))
        if extra is not None:
            loss = loss + S["mtp_weight"] * extra
        return loss


class BertLM(nn.Module):
    """BERT pre-training (BertForPreTraining): word, position and token-type embeddings with a
    LayerNorm, post-LN encoder blocks, the masked-LM head (dense, GeLU, LayerNorm, tied decoder
    with its bias) and the next-sentence head (pooler on the first token, a 2-way classifier).
    Every token is a masked-LM target; all tokens are segment A."""

    def __init__(self, S, device="meta", dtype=torch.bfloat16):
        super().__init__()
        self.S = S
        h, v = S["hidden"], S["vocab"]
        kw = dict(device=device, dtype=dtype)
        self.word_embeddings = nn.Embedding(v, h, **kw)
        self.position_embeddings = nn.Embedding(S["max_positions"], h, **kw)
        self.token_type_embeddings = nn.Embedding(S["type_vocab"], h, **kw)
        self.embeddings_norm = nn.LayerNorm(h, eps=S["eps"], **kw)
        self.embed_dropout = nn.Dropout(S["embd_p"])
        self.register_buffer("token_type_ids", torch.zeros(1, S["max_positions"], dtype=torch.long, device=device),
                             persistent=False)
        self.layers = nn.ModuleList([DecoderLayer(S, layer, device, dtype) for layer in S["layers"]])
        self.transform = nn.Linear(h, h, **kw)
        self.transform_norm = nn.LayerNorm(h, eps=S["eps"], **kw)
        self.decoder_bias = nn.Parameter(torch.zeros(v, **kw))
        self.pooler = nn.Linear(h, h, **kw)
        self.seq_relationship = nn.Linear(h, 2, **kw)

    def forward(self, input_ids, labels):
        S = self.S
        s = input_ids.shape[1]
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions(input_ids)) + \
            self.token_type_embeddings(self.token_type_ids[:, :s])
        x = self.embeddings_norm(x)
        if S["embd_p"] > 0:
            x = self.embed_dropout(x)
        for layer in self.layers:
            x = layer(x, {})
        t = self.transform_norm(_activate(S["act"], self.transform(x)))
        logits = F.linear(t, self.word_embeddings.weight, self.decoder_bias)
        mlm = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))
        pooled = torch.tanh(self.pooler(x[:, 0]))
        nsp = F.cross_entropy(self.seq_relationship(pooled).float(), labels[:, 0].remainder(2))
        return mlm + nsp


# --- Hugging Face config.json -> reference module -----------------------------------------

class ConfigError(Exception):
    """A config.json that does not describe a supported model (message without the file name)."""


def json_repr(value):
    import json
    return json.dumps(value)


class _Keys:
    """The language model's keys: text_config's (multimodal configs), else the file's top level
    for what the text part leaves out. null reads as absent, as transformers reads it."""

    def __init__(self, top):
        self.top = top
        text = top.get("text_config")
        if text is not None and not isinstance(text, dict):
            raise ConfigError("'text_config' must be an object")
        self.text = text

    def _where(self, key):
        if self.text is not None and self.text.get(key) is not None:
            return self.text, "text_config." + key
        if self.top.get(key) is not None:
            return self.top, key
        return None, key

    def has(self, key):
        return self._where(key)[0] is not None

    def raw(self, key, default=None):
        obj, _ = self._where(key)
        return default if obj is None else obj[key]

    def size(self, key, default=None, required=False, minimum=1):
        obj, path = self._where(key)
        if obj is None:
            if required:
                raise ConfigError("missing key '%s'" % key)
            return default
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError("'%s' must be an integer of at least %d, found %s" % (path, minimum, json_repr(value)))
        return value

    def number(self, key, default):
        obj, path = self._where(key)
        if obj is None:
            return float(default)
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError("'%s' must be a non-negative number, found %s" % (path, json_repr(value)))
        return float(value)

    def flag(self, key, default):
        obj, path = self._where(key)
        if obj is None:
            return default
        if not isinstance(obj[key], bool):
            raise ConfigError("'%s' must be true or false, found %s" % (path, json_repr(obj[key])))
        return obj[key]

    def string(self, key, default):
        obj, path = self._where(key)
        if obj is None:
            return default
        if not isinstance(obj[key], str):
            raise ConfigError("'%s' must be a string, found %s" % (path, json_repr(obj[key])))
        return obj[key]

    def path(self, key):
        return self._where(key)[1]


GATED_ACTS = ("silu", "swish")
GELU_ACTS = ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh")
PLAIN_ACTS = GELU_ACTS + ("relu", "relu2", "silu")


def _act(k, keys, accepted, default):
    for key in keys:
        if k.has(key):
            act = k.string(key, default)
            if act not in accepted:
                raise ConfigError("%s '%s' is not supported (%s)" % (k.path(key), act, ", ".join(accepted)))
            return act
    return default


def _plain_act(name):
    return {"gelu": "gelu", "relu": "relu", "relu2": "relu2", "silu": "silu"}.get(name, "gelu_tanh")


def _dropout(k, keys):
    p = 0.0
    for key in keys:
        p = max(p, k.number(key, 0.0))
    if p >= 1:
        raise ConfigError("dropout probabilities must be below 1")
    return p


def _base(k, *, hidden, layers, heads, vocab, max_pos, kv=None, head_dim=None, tied=False, eps=1e-6):
    """The spec every decoder shares; families override what differs."""
    if hidden % heads and head_dim is None:
        raise ConfigError("num_attention_heads (%d) must divide hidden_size (%d)" % (heads, hidden))
    kv = kv or heads
    if heads % kv:
        raise ConfigError("num_key_value_heads (%d) must divide num_attention_heads (%d)" % (kv, heads))
    d = head_dim or hidden // heads
    return {
        "hidden": hidden, "heads": heads, "kv_heads": kv, "head_dim": d, "vocab": vocab,
        "max_positions": max_pos, "tied": tied, "eps": eps, "n_layers": layers,
        "norm": "rms", "norms": "pre", "q_bias": False, "kv_bias": False, "o_bias": False,
        "qk_norm": None, "rotary_dim": d, "sinks": False, "softcap": 0.0, "scale": d ** -0.5,
        "causal": True, "attention": "materialised", "attn_p": 0.0, "resid_p": 0.0, "embd_p": 0.0,
        "act": "swiglu", "ffn": None, "mlp_bias": False, "moe": None, "mla": None, "mamba": None,
        "embed_scale": 1.0, "logit_scale": 1.0, "residual_scale": 1.0, "final_softcap": 0.0,
        "head_bias": False, "mtp": 0, "mtp_weight": 0.3, "rope_tables": {"rope": (10000.0, d)},
        "layers": None,
    }


def _uniform(S, mixer="attention", mlp="dense", window=0):
    S["layers"] = [{"mixer": mixer, "mlp": mlp, "window": window, "rope": "rope" if S["rotary_dim"] else None,
                    "ffn": S["ffn"]} for _ in range(S["n_layers"])]


def _moe(experts, top_k, width, *, scoring="softmax", norm_topk=False, shared=0, shared_gate=False,
         router_bias=False, correction_bias=False, groups=1, topk_groups=1, scale=1.0, gated=True,
         expert_bias=False, scale_input=False):
    if top_k > experts:
        raise ConfigError("num_experts_per_tok (%d) exceeds the experts (%d)" % (top_k, experts))
    return {"experts": experts, "top_k": top_k, "width": width, "scoring": scoring, "norm_topk": norm_topk,
            "shared": shared, "shared_gate": shared_gate, "router_bias": router_bias,
            "correction_bias": correction_bias, "groups": groups, "topk_groups": topk_groups, "scale": scale,
            "gated": gated, "expert_bias": expert_bias, "scale_input": scale_input}


def _window(k, S):
    """Every layer sliding when the config has a window shorter than its context (Mistral,
    Phi-3, StarCoder2), unless use_sliding_window is false (core's uniformWindow)."""
    if not k.has("sliding_window") or not k.flag("use_sliding_window", True):
        return 0
    w = k.size("sliding_window")
    return 0 if w >= S["max_positions"] else w


def _llama_like(k, model_type):
    h = k.size("hidden_size", required=True)
    heads = k.size("num_attention_heads", required=True)
    S = _base(k, hidden=h, layers=k.size("num_hidden_layers", required=True), heads=heads,
              vocab=k.size("vocab_size", required=True), max_pos=k.size("max_position_embeddings", 4096),
              kv=k.size("num_key_value_heads", heads), head_dim=k.size("head_dim", None),
              tied=k.flag("tie_word_embeddings", model_type == "minicpm"), eps=k.number("rms_norm_eps", 1e-6))
    S["ffn"] = k.size("intermediate_size", required=True)
    S["q_bias"] = S["kv_bias"] = S["o_bias"] = k.flag("attention_bias", False)
    S["mlp_bias"] = k.flag("mlp_bias", False)
    S["attn_p"] = _dropout(k, ["attention_dropout"])
    S["rope_tables"] = {"rope": (k.number("rope_theta", 10000.0), S["head_dim"])}
    S["rotary_dim"] = S["head_dim"]
    _act(k, ["hidden_act"], GATED_ACTS, "silu")
    return S


def _decoder_spec(k, model_type):
    """Spec of a decoder-only family, as core's importer reads the same keys."""
    t = model_type
    if t in ("llama", "mistral", "mixtral", "minicpm", "phi3"):
        S = _llama_like(k, t)
        if t == "phi3":
            S["resid_p"] = _dropout(k, ["resid_pdrop"])
            S["embd_p"] = _dropout(k, ["embd_pdrop"])
            S["rotary_dim"] = int(S["head_dim"] * k.number("partial_rotary_factor", 1.0))
            S["rope_tables"] = {"rope": (k.number("rope_theta", 10000.0), S["rotary_dim"])}
        if t == "minicpm":
            S["embed_scale"] = k.number("scale_emb", 1.0)
            if k.has("scale_depth"):
                S["residual_scale"] = k.number("scale_depth", 1.0) / math.sqrt(S["n_layers"])
            S["logit_scale"] = 1.0 / (S["hidden"] / k.number("dim_model_base", S["hidden"]))
        mlp = "dense"
        if t == "mixtral":
            S["moe"] = _moe(k.size("num_local_experts", 8), k.size("num_experts_per_tok", 2), S["ffn"],
                            norm_topk=True)
            mlp = "moe"
        elif t == "minicpm" and k.has("num_experts"):
            S["moe"] = _moe(k.size("num_experts"), k.size("num_experts_per_tok", 2), S["ffn"], norm_topk=True)
            mlp = "moe"
        _uniform(S, mlp=mlp, window=_window(k, S))
        return S
    if t in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        v3, moe = t.startswith("qwen3"), t.endswith("_moe")
        if v3 and not k.has("head_dim"):
            k.top.setdefault("head_dim", 128)  # Qwen3Config's default
        S = _llama_like(k, t)
        if v3:
            S["qk_norm"] = "rms"
        else:
            S["q_bias"] = S["kv_bias"] = k.flag("qkv_bias", True)
            S["o_bias"] = False
        window = k.size("sliding_window") if k.flag("use_sliding_window", False) and k.has("sliding_window") else 0
        first_window = k.size("max_window_layers", S["n_layers"], minimum=0)
        _uniform(S)
        for i, layer in enumerate(S["layers"]):
            layer["window"] = window if i >= first_window else 0
        if moe:
            shared = k.size("shared_expert_intermediate_size", 0, minimum=0) if t == "qwen2_moe" else 0
            S["moe"] = _moe(k.size("num_experts", required=True), k.size("num_experts_per_tok", required=True),
                            k.size("moe_intermediate_size", required=True), norm_topk=k.flag("norm_topk_prob", False),
                            shared=shared, shared_gate=shared > 0)
            step = k.size("decoder_sparse_step", 1)
            only = k.raw("mlp_only_layers", []) or []
            if not isinstance(only, list) or not all(isinstance(i, int) for i in only):
                raise ConfigError("'%s' must be an array of layer indices" % k.path("mlp_only_layers"))
            for i, layer in enumerate(S["layers"]):
                layer["mlp"] = "moe" if i not in only and (i + 1) % step == 0 else "dense"
        return S
    if t in ("deepseek", "deepseek_v2", "deepseek_v3"):
        S = _llama_like(k, t)
        v3 = t == "deepseek_v3"
        routed = k.size("n_routed_experts", 0, minimum=0)
        if t != "deepseek":
            # q_lora_rank: null is no LoRA on Q (q_proj); absent, DeepseekV2Config's default 1536.
            holder = k.text if k.text is not None and "q_lora_rank" in k.text else k.top
            q_lora = k.size("q_lora_rank") if holder.get("q_lora_rank") is not None else \
                (None if "q_lora_rank" in holder else 1536)
            S["mla"] = {"q_lora": q_lora or 0, "kv_lora": k.size("kv_lora_rank", required=True),
                        "rope": k.size("qk_rope_head_dim", required=True),
                        "nope": k.size("qk_nope_head_dim", required=True), "v": k.size("v_head_dim", required=True)}
            S["q_bias"] = S["o_bias"] = k.flag("attention_bias", False)
            qk = S["mla"]["nope"] + S["mla"]["rope"]
            S["scale"] = qk ** -0.5
            S["rope_tables"] = {"rope": (k.number("rope_theta", 10000.0), S["mla"]["rope"])}
        first = k.size("first_k_dense_replace", 3 if v3 else 0, minimum=0)
        freq = k.size("moe_layer_freq", 1)
        _uniform(S, mixer="attention" if t == "deepseek" else "mla")
        if routed:
            shared = k.size("n_shared_experts", 1 if v3 else (2 if t == "deepseek_v2" else 0), minimum=0)
            width = k.size("moe_intermediate_size", required=True)
            scoring = k.string("scoring_func", "sigmoid" if v3 else "softmax")
            method = k.string("topk_method", "noaux_tc" if v3 else "greedy")
            S["moe"] = _moe(routed, k.size("num_experts_per_tok", required=True), width, scoring=scoring,
                            norm_topk=k.flag("norm_topk_prob", False), shared=shared * width,
                            correction_bias=v3, groups=k.size("n_group", 1) if method != "greedy" else 1,
                            topk_groups=k.size("topk_group", 1), scale=k.number("routed_scaling_factor", 1.0))
            for i, layer in enumerate(S["layers"]):
                layer["mlp"] = "moe" if i >= first and i % freq == 0 else "dense"
        if v3:
            S["mtp"] = k.size("num_nextn_predict_layers", 0, minimum=0)
        return S
    if t in ("gemma", "gemma2", "gemma3", "gemma3_text"):
        g3 = t in ("gemma3", "gemma3_text")
        defaults = {"gemma": {}, "gemma2": {"vocab_size": 256000, "head_dim": 256},
                    "gemma3": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                               "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
                               "head_dim": 256}}["gemma3" if g3 else t]
        for key, value in defaults.items():
            if not k.has(key):
                (k.text if k.text is not None else k.top)[key] = value
        if t == "gemma" and not k.has("head_dim"):
            (k.text if k.text is not None else k.top)["head_dim"] = 256
        S = _base(k, hidden=k.size("hidden_size", required=True), layers=k.size("num_hidden_layers", required=True),
                  heads=k.size("num_attention_heads", required=True), vocab=k.size("vocab_size", required=True),
                  max_pos=k.size("max_position_embeddings", 8192 if t != "gemma3_text" and not g3 else 131072),
                  kv=k.size("num_key_value_heads", None), head_dim=k.size("head_dim", None),
                  tied=k.flag("tie_word_embeddings", True), eps=k.number("rms_norm_eps", 1e-6))
        _act(k, ["hidden_activation", "hidden_act"], GELU_ACTS, "gelu_pytorch_tanh")
        S["act"] = "geglu"
        S["norm"] = "rms1p"
        S["ffn"] = k.size("intermediate_size", required=True)
        S["q_bias"] = S["kv_bias"] = S["o_bias"] = k.flag("attention_bias", False)
        S["attn_p"] = _dropout(k, ["attention_dropout"])
        S["embed_scale"] = math.sqrt(S["hidden"])
        theta = k.number("rope_theta", 10000.0)
        S["rope_tables"] = {"rope": (theta, S["head_dim"])}
        _uniform(S)
        if t == "gemma":
            return S
        S["norms"] = "sandwich"
        S["scale"] = k.number("query_pre_attn_scalar", S["head_dim"]) ** -0.5
        S["softcap"] = k.number("attn_logit_softcapping", 0.0)
        S["final_softcap"] = k.number("final_logit_softcapping", 0.0)
        window = k.size("sliding_window", 4096)
        types = k.raw("layer_types")
        if types is not None:
            if not isinstance(types, list) or len(types) != S["n_layers"]:
                raise ConfigError("'%s' must list one type per layer" % k.path("layer_types"))
            sliding = [x in ("sliding_attention", "chunked_attention") for x in types]
        elif t == "gemma2":
            sliding = [i % 2 == 0 for i in range(S["n_layers"])]
        else:
            period = k.size("sliding_window_pattern", 6)
            sliding = [(i + 1) % period != 0 for i in range(S["n_layers"])]
        if g3:
            S["qk_norm"] = "rms1p"
            S["rope_tables"]["local"] = (k.number("rope_local_base_freq", 10000.0), S["head_dim"])
        for layer, slide in zip(S["layers"], sliding):
            layer["window"] = window if slide else 0
            if g3 and slide:
                layer["rope"] = "local"
        return S
    if t in ("phi", "gpt_neox", "starcoder2"):
        h = k.size("hidden_size", required=True)
        heads = k.size("num_attention_heads", required=True)
        S = _base(k, hidden=h, layers=k.size("num_hidden_layers", required=True), heads=heads,
                  vocab=k.size("vocab_size", required=True), max_pos=k.size("max_position_embeddings", 2048),
                  kv=k.size("num_key_value_heads", heads), tied=k.flag("tie_word_embeddings", t == "starcoder2"),
                  eps=k.number("layer_norm_eps", k.number("norm_epsilon", k.number("layer_norm_epsilon", 1e-5))))
        S["norm"] = "layer"
        S["ffn"] = k.size("intermediate_size", 4 * h)
        S["act"] = _plain_act(_act(k, ["hidden_act"], PLAIN_ACTS, "gelu_new"))
        if t == "phi":
            S["norms"] = "parallel"
            S["q_bias"] = S["kv_bias"] = S["o_bias"] = S["mlp_bias"] = S["head_bias"] = True
            S["qk_norm"] = "layer" if k.flag("qk_layernorm", False) else None
            frac = k.number("partial_rotary_factor", 0.5)
            S["resid_p"] = _dropout(k, ["resid_pdrop"])
            S["embd_p"] = _dropout(k, ["embd_pdrop"])
            S["attn_p"] = _dropout(k, ["attention_dropout"])
            theta = k.number("rope_theta", 10000.0)
        elif t == "gpt_neox":
            S["norms"] = "parallel2" if k.flag("use_parallel_residual", True) else "pre"
            S["q_bias"] = S["kv_bias"] = S["o_bias"] = k.flag("attention_bias", True)
            S["mlp_bias"] = True
            frac = k.number("rotary_pct", 0.25)
            S["resid_p"] = _dropout(k, ["hidden_dropout"])
            S["attn_p"] = _dropout(k, ["attention_dropout"])
            theta = k.number("rotary_emb_base", k.number("rope_theta", 10000.0))
        else:
            if k.string("norm_type", "layer_norm") == "rms_norm":
                S["norm"] = "rms"
            bias = k.flag("use_bias", True)
            S["q_bias"] = S["kv_bias"] = S["o_bias"] = S["mlp_bias"] = bias
            frac = 1.0
            S["resid_p"] = _dropout(k, ["residual_dropout"])
            S["embd_p"] = _dropout(k, ["embedding_dropout"])
            S["attn_p"] = _dropout(k, ["attention_dropout"])
            theta = k.number("rope_theta", 10000.0)
        S["rotary_dim"] = int(S["head_dim"] * frac)
        S["rope_tables"] = {"rope": (theta, S["rotary_dim"])}
        _uniform(S, window=_window(k, S) if t == "starcoder2" else 0)
        return S
    if t == "gptj":
        h = k.size("n_embd", required=True)
        S = _base(k, hidden=h, layers=k.size("n_layer", required=True), heads=k.size("n_head", required=True),
                  vocab=k.size("vocab_size", required=True), max_pos=k.size("n_positions", 2048),
                  tied=k.flag("tie_word_embeddings", False), eps=k.number("layer_norm_epsilon", 1e-5))
        S["norm"], S["norms"] = "layer", "parallel"
        S["ffn"] = k.size("n_inner", 4 * h)
        S["act"] = _plain_act(_act(k, ["activation_function"], PLAIN_ACTS, "gelu_new"))
        S["mlp_bias"] = S["head_bias"] = True
        S["rotary_dim"] = k.size("rotary_dim", S["head_dim"])
        S["rope_tables"] = {"rope": (10000.0, S["rotary_dim"])}
        S["resid_p"] = _dropout(k, ["resid_pdrop"])
        S["embd_p"] = _dropout(k, ["embd_pdrop"])
        S["attn_p"] = _dropout(k, ["attn_pdrop"])
        _uniform(S)
        return S
    if t == "falcon":
        h = k.size("hidden_size", required=True)
        heads = k.size("num_attention_heads") if k.has("num_attention_heads") else k.size("n_head", required=True)
        layers = k.size("num_hidden_layers") if k.has("num_hidden_layers") else k.size("n_layer", required=True)
        new = k.flag("new_decoder_architecture", False)
        kv = k.size("num_kv_heads", heads) if new else (1 if k.flag("multi_query", True) else heads)
        if k.flag("alibi", False):
            raise ConfigError("'alibi': ALiBi positions are not modelled (rotary Falcon configs are)")
        S = _base(k, hidden=h, layers=layers, heads=heads, vocab=k.size("vocab_size", required=True),
                  max_pos=k.size("max_position_embeddings", 2048), kv=kv, tied=k.flag("tie_word_embeddings", True),
                  eps=k.number("layer_norm_epsilon", 1e-5))
        S["norm"] = "layer"
        S["ffn"] = k.size("ffn_hidden_size", 4 * h)
        S["act"] = "gelu"
        bias = k.flag("bias", False)
        S["q_bias"] = S["kv_bias"] = S["o_bias"] = S["mlp_bias"] = bias
        parallel = k.flag("parallel_attn", True)
        lns = k.size("num_ln_in_parallel_attn", 2 if new else 1)
        S["norms"] = "pre" if not parallel else ("parallel2" if lns == 2 else "parallel")
        S["resid_p"] = _dropout(k, ["hidden_dropout"])
        S["attn_p"] = _dropout(k, ["attention_dropout"])
        S["rope_tables"] = {"rope": (k.number("rope_theta", 10000.0), S["head_dim"])}
        _uniform(S)
        return S
    if t == "gpt_oss":
        S = _llama_like(k, t)
        S["eps"] = k.number("rms_norm_eps", 1e-5)
        if not k.has("head_dim"):
            S["head_dim"] = S["rotary_dim"] = 64
            S["scale"] = 64 ** -0.5
            S["rope_tables"] = {"rope": (k.number("rope_theta", 150000.0), 64)}
        S["q_bias"] = S["kv_bias"] = S["o_bias"] = k.flag("attention_bias", True)
        S["sinks"] = True
        top_k = k.size("num_experts_per_tok") if k.has("num_experts_per_tok") else k.size("experts_per_token", 4)
        S["moe"] = _moe(k.size("num_local_experts", required=True), top_k, S["ffn"], scoring="topk_softmax",
                        router_bias=True, expert_bias=True)
        _uniform(S, mlp="moe")
        window = k.size("sliding_window", 128)
        types = k.raw("layer_types")
        for i, layer in enumerate(S["layers"]):
            slide = types[i] == "sliding_attention" if isinstance(types, list) and len(types) == S["n_layers"] \
                else i % 2 == 0
            layer["window"] = window if slide else 0
        return S
    if t == "nemotron_h":
        h = k.size("hidden_size", required=True)
        heads = k.size("num_attention_heads", required=True)
        head_dim = k.size("attention_head_dim", None) or k.size("head_dim", None)
        S = _base(k, hidden=h, layers=k.size("num_hidden_layers", required=True), heads=heads,
                  vocab=k.size("vocab_size", required=True), max_pos=k.size("max_position_embeddings", 4096),
                  kv=k.size("num_key_value_heads", heads), head_dim=head_dim,
                  tied=k.flag("tie_word_embeddings", False),
                  eps=k.number("rms_norm_eps", k.number("layer_norm_epsilon", 1e-5)))
        S["act"] = _plain_act(_act(k, ["mlp_hidden_act"], PLAIN_ACTS, "relu2"))
        S["ffn"] = k.size("intermediate_size", required=True)
        S["q_bias"] = S["kv_bias"] = S["o_bias"] = k.flag("attention_bias", False)
        S["mlp_bias"] = k.flag("mlp_bias", False)
        S["rotary_dim"] = 0
        S["rope_tables"] = {}
        S["mamba"] = {"heads": k.size("mamba_num_heads", required=True),
                      "head_dim": k.size("mamba_head_dim", required=True),
                      "state": k.size("ssm_state_size", 128), "groups": k.size("n_groups", 8),
                      "conv": k.size("conv_kernel", 4), "chunk": k.size("chunk_size", 256),
                      "bias": k.flag("use_bias", False), "conv_bias": k.flag("use_conv_bias", True)}
        if S["mamba"]["heads"] % S["mamba"]["groups"]:
            raise ConfigError("n_groups (%d) must divide mamba_num_heads (%d)"
                              % (S["mamba"]["groups"], S["mamba"]["heads"]))
        pattern = k.string("hybrid_override_pattern", "")
        kinds = {"M": ("mamba", None), "*": ("attention", None), "-": (None, "dense"), "E": (None, "moe")}
        if len(pattern) != S["n_layers"] or any(c not in kinds for c in pattern):
            raise ConfigError("'%s' must have one of M * - E per layer (%d layers)"
                              % (k.path("hybrid_override_pattern"), S["n_layers"]))
        if "E" in pattern:
            S["moe"] = _moe(k.size("n_routed_experts", required=True), k.size("num_experts_per_tok", required=True),
                            k.size("moe_intermediate_size", required=True), scoring="sigmoid",
                            norm_topk=k.flag("norm_topk_prob", True), correction_bias=True, gated=False,
                            shared=k.size("moe_shared_expert_intermediate_size", required=True),
                            groups=k.size("n_group", 1), topk_groups=k.size("topk_group", 1),
                            scale=k.number("routed_scaling_factor", 1.0))
        S["layers"] = [{"mixer": kinds[c][0], "mlp": kinds[c][1], "window": 0, "rope": None, "ffn": S["ffn"]}
                       for c in pattern]
        return S
    if t in ("llama4", "llama4_text"):
        S = _llama_like(k, t)
        S["tied"] = bool(k.top.get("tie_word_embeddings", False)) if k.text is not None else S["tied"]
        width = S["ffn"]
        S["ffn"] = k.size("intermediate_size_mlp", width)
        S["qk_norm"] = "l2" if k.flag("use_qk_norm", True) else None
        S["moe"] = _moe(k.size("num_local_experts", required=True), k.size("num_experts_per_tok", 1), width,
                        scoring="topk_sigmoid", shared=width, scale_input=True)
        n = S["n_layers"]
        step = k.size("interleave_moe_layer_step", 1)
        moe_layers = k.raw("moe_layers") or list(range(step - 1, n, step))
        nope = k.raw("no_rope_layers")
        _uniform(S)
        for i, layer in enumerate(S["layers"]):
            layer["mlp"] = "moe" if i in moe_layers else "dense"
            use_rope = bool(nope[i]) if isinstance(nope, list) and len(nope) == n else (i + 1) % 4 != 0
            layer["rope"] = "rope" if use_rope else None
        return S
    raise AssertionError(t)


def _bert_spec(k):
    h = k.size("hidden_size", required=True)
    S = _base(k, hidden=h, layers=k.size("num_hidden_layers", required=True),
              heads=k.size("num_attention_heads", required=True), vocab=k.size("vocab_size", required=True),
              max_pos=k.size("max_position_embeddings", 512), eps=k.number("layer_norm_eps", 1e-12))
    S["norm"], S["norms"], S["causal"] = "layer", "post", False
    S["act"] = _plain_act(_act(k, ["hidden_act"], ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu"), "gelu"))
    S["ffn"] = k.size("intermediate_size", 4 * h)
    S["q_bias"] = S["kv_bias"] = S["o_bias"] = S["mlp_bias"] = True
    S["rotary_dim"] = 0
    S["rope_tables"] = {}
    S["type_vocab"] = k.size("type_vocab_size", 2)
    S["resid_p"] = S["embd_p"] = _dropout(k, ["hidden_dropout_prob"])
    S["attn_p"] = _dropout(k, ["attention_probs_dropout_prob"])
    _uniform(S)
    return S


GPT2_TYPES = ("gpt2",)
DECODER_TYPES = ("llama", "mistral", "mixtral", "minicpm", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                 "deepseek", "deepseek_v2", "deepseek_v3", "gemma", "gemma2", "gemma3", "gemma3_text", "phi",
                 "gpt_neox", "gptj", "falcon", "starcoder2", "gpt_oss", "nemotron_h", "llama4", "llama4_text")
SUPPORTED_TYPES = GPT2_TYPES + ("bert",) + DECODER_TYPES
ATTENTION_KINDS = ("materialised", "flash")


def _gpt2(cfg, device, dtype):
    k = _Keys(cfg)
    h = k.size("n_embd", required=True)
    heads = k.size("n_head", required=True)
    c = {
        "n_embd": h, "n_head": heads,
        "n_layer": k.size("n_layer", required=True),
        "vocab_size": k.size("vocab_size", required=True),
        "n_positions": k.size("n_positions", k.size("n_ctx", 1024)),
        "n_inner": k.size("n_inner", 4 * h),
        "attn_pdrop": k.number("attn_pdrop", 0.1),
        "resid_pdrop": k.number("resid_pdrop", 0.1),
        "embd_pdrop": k.number("embd_pdrop", 0.1),
        "layer_norm_epsilon": k.number("layer_norm_epsilon", 1e-5),
        "tie_word_embeddings": k.flag("tie_word_embeddings", True),
    }
    if h % heads:
        raise ConfigError("n_head (%d) must divide n_embd (%d)" % (heads, h))
    act = cfg.get("activation_function", "gelu_new")
    if act not in ("gelu_new", "gelu", "gelu_pytorch_tanh", "gelu_fast"):
        raise ConfigError("activation_function '%s' is not supported (GeLU only)" % act)
    info = {"family": "gpt", "hidden": h, "heads": heads, "kv_heads": heads,
            "vocab": c["vocab_size"], "max_positions": c["n_positions"]}
    return GPT2LM(c, device=device, dtype=dtype), info


# The keys of a NEST model file (docs/formats.md, "Model inputs") this translation reads; a
# file with others (layer patterns, hybrid stacks, per-kind widths) describes more than the four
# families' uniform stacks and is refused by name.
NEST_MODEL_KEYS = ("format", "name", "family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab",
                   "max_positions", "type_vocab", "experts", "top_k", "tied_embeddings", "gated_mlp", "linear_bias",
                   "norm", "dropout", "seq_length", "global_batch", "source", "comment", "description")


def is_nest_model(cfg):
    """Whether a parsed JSON is a NEST model file (what nest-cli --model reads), not a config.json."""
    return isinstance(cfg, dict) and "model_type" not in cfg and (
        cfg.get("format") == "nest-model" or ("family" in cfg and "hidden" in cfg))


def hf_config_from_nest_model(m):
    """The config.json of the Hugging Face family a NEST model file's family stands for (gpt ->
    gpt2, llama, mixtral, bert), so nest-extract traces the same shapes nest-cli costs
    (issue 49: `nest-extract --hf-config mixtral` was refused while nest-cli inspect read it).
    Raises ConfigError."""
    for key in m:
        if key not in NEST_MODEL_KEYS and not key.startswith("_"):
            raise ConfigError("'%s' is a NEST model key nest-extract does not translate (it reads %s)"
                              % (key, ", ".join(k for k in NEST_MODEL_KEYS if k not in ("comment", "description"))))
    family = m.get("family")
    if family not in ("gpt", "llama", "mixtral", "bert"):
        raise ConfigError("family %s is not one of gpt, llama, mixtral, bert" % json_repr(family))
    for key in ("layers", "hidden", "heads", "vocab"):
        if not isinstance(m.get(key), int) or isinstance(m.get(key), bool):
            raise ConfigError("'%s' must be a whole number, found %s" % (key, json_repr(m.get(key))))
    positions = m.get("max_positions") or m.get("seq_length") or 2048
    ffn = m.get("ffn_hidden") or 4 * m["hidden"]
    if family == "gpt":
        return {"model_type": "gpt2", "n_embd": m["hidden"], "n_layer": m["layers"], "n_head": m["heads"],
                "n_inner": ffn, "vocab_size": m["vocab"], "n_positions": positions,
                "activation_function": "gelu_new", "_name_or_path": m.get("name", "")}
    if family == "bert":
        return {"model_type": "bert", "hidden_size": m["hidden"], "num_hidden_layers": m["layers"],
                "num_attention_heads": m["heads"], "intermediate_size": ffn, "vocab_size": m["vocab"],
                "max_position_embeddings": positions, "type_vocab_size": m.get("type_vocab", 2) or 2,
                "hidden_act": "gelu", "_name_or_path": m.get("name", "")}
    cfg = {"model_type": family, "hidden_size": m["hidden"], "num_hidden_layers": m["layers"],
           "num_attention_heads": m["heads"], "num_key_value_heads": m.get("kv_heads") or m["heads"],
           "intermediate_size": ffn, "vocab_size": m["vocab"], "max_position_embeddings": positions,
           "hidden_act": "silu", "rms_norm_eps": 1e-5, "tie_word_embeddings": bool(m.get("tied_embeddings", False)),
           "_name_or_path": m.get("name", "")}
    if family == "mixtral":
        cfg["num_local_experts"] = m.get("experts", 8)
        cfg["num_experts_per_tok"] = m.get("top_k", 2)
    return cfg


def model_spec(cfg):
    """(model_type, spec) of a parsed config.json for DecoderLM / BertLM; raises ConfigError."""
    if not isinstance(cfg, dict):
        raise ConfigError("expected a JSON object")
    model_type = cfg.get("model_type")
    if model_type not in SUPPORTED_TYPES or model_type in GPT2_TYPES:
        raise ConfigError("model_type %s is not supported (supported: %s)"
                          % (json_repr(model_type), ", ".join(SUPPORTED_TYPES)))
    cfg = dict(cfg)
    if isinstance(cfg.get("text_config"), dict):
        cfg["text_config"] = dict(cfg["text_config"])
    k = _Keys(cfg)
    S = _bert_spec(k) if model_type == "bert" else _decoder_spec(k, model_type)
    if S["mla"] is None and S["mamba"] is None and S["rotary_dim"] % 2:
        raise ConfigError("the rotary width (%d) must be even" % S["rotary_dim"])
    return model_type, S


def model_from_hf_config(cfg, device, dtype, attention="materialised"):
    """(module, description dict) for a parsed config.json; raises ConfigError.
    attention: "materialised" (scores in memory) or "flash" (a fused kernel's memory)."""
    if isinstance(cfg, dict) and cfg.get("model_type") in GPT2_TYPES:
        if attention != "materialised":
            raise ConfigError("the GPT-2 reference module runs materialised attention only")
        return _gpt2(cfg, device, dtype)
    model_type, S = model_spec(cfg)
    S["attention"] = attention
    model = BertLM(S, device, dtype) if model_type == "bert" else DecoderLM(S, device, dtype)
    info = {"family": model_type, "hidden": S["hidden"], "heads": S["heads"], "kv_heads": S["kv_heads"],
            "vocab": S["vocab"], "max_positions": S["max_positions"]}
    if S["moe"]:
        info["experts"], info["top_k"] = S["moe"]["experts"], S["moe"]["top_k"]
    return model, info
