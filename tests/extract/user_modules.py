"""Modules for the nest-extract tests, given as --module FILE:CLASS: a small language model, one that
torch.fx cannot trace (control flow on a tensor's value), one written with the shape code people
write (`b, s, _ = x.shape`, nanoGPT's attention), and a mixture of experts written as Hugging
Face's Mixtral loops over its experts, which the meta device cannot run."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MlpBlock(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.up = nn.Linear(hidden, inner)
        self.down = nn.Linear(inner, hidden)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class TinyMlpLM(nn.Module):
    """Token embedding, `layers` residual MLP blocks, a final norm and an untied output layer."""

    def __init__(self, layers, hidden, vocab, inner=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([MlpBlock(hidden, inner or 4 * hidden) for _ in range(layers)])
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        for block in self.blocks:
            x = block(x)
        return self.out(self.norm(x))


class Untraceable(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 8)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        if x.sum() > 0:  # data-dependent control flow: torch.fx cannot trace it
            return x * 2
        return x


# --- common module code: shapes read as Python ints (nanoGPT style) -----------------------

class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: fused QKV, `B, T, C = x.size()`, a scale from k.size(-1), a causal
    mask buffer sliced by T."""

    def __init__(self, hidden, heads, block_size):
        super().__init__()
        self.n_head = heads
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GeluMlp(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class NanoBlock(nn.Module):
    def __init__(self, hidden, heads, block_size, mlp=None):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, block_size)
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = mlp if mlp is not None else GeluMlp(hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ShapeUnpackLM(nn.Module):
    """A GPT written as people write modules: `b, t = idx.size()`, an assert on the length,
    positions from torch.arange(t), `b, s, _ = x.shape` before the output layer."""

    def __init__(self, layers, hidden, heads, vocab, block_size):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(block_size, hidden)
        self.h = nn.ModuleList([NanoBlock(hidden, heads, block_size) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        b, s, _ = x.shape
        logits = self.lm_head(self.ln_f(x))
        return logits.view(b * s, -1)


# --- a mixture of experts as Hugging Face's Mixtral writes it: the meta device cannot run it ----

class Expert(nn.Module):
    def __init__(self, hidden, inner):
        super().__init__()
        self.w1 = nn.Linear(hidden, inner, bias=False)
        self.w2 = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)))


class LoopMoe(nn.Module):
    """Softmax router, top-k, and a loop over the experts that gathers each expert's tokens with
    torch.where on a one-hot mask (data-dependent shapes: no meta kernel for nonzero)."""

    def __init__(self, hidden, inner, experts, top_k):
        super().__init__()
        self.top_k, self.num_experts = top_k, experts
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.experts = nn.ModuleList([Expert(hidden, inner) for _ in range(experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights = (routing_weights / routing_weights.sum(dim=-1, keepdim=True)).to(hidden_states.dtype)
        final = torch.zeros((batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype,
                            device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[top_x]
            current = self.experts[expert_idx](current_state) * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, current)
        return final.reshape(batch_size, sequence_length, hidden_dim)


class LoopMoeLM(nn.Module):
    """nanoGPT blocks whose MLP is LoopMoe."""

    def __init__(self, layers, hidden, heads, vocab, block_size, experts=4, top_k=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(block_size, hidden)
        self.h = nn.ModuleList([NanoBlock(hidden, heads, block_size, LoopMoe(hidden, 2 * hidden, experts, top_k))
                                for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        x = self.wte(idx) + self.wpe(torch.arange(0, t, dtype=torch.long, device=idx.device))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))
