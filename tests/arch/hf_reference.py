#!/usr/bin/env python3
"""An independent forward pass of a Hugging Face decoder folder, in float64 with numpy.

    hf_reference.py --model FOLDER --prompt-len N --greedy G --seed S --out FILE

Reads config.json and the safetensors weights itself (nothing of Pagoda's), draws a prompt of N
token ids from the seed, runs it teacher-forced, then G greedy steps, and writes FILE:

    prompt <N ids>
    greedy <G ids>
    then per prompt position i ≥ 1, one line "<logprob of prompt[i]> <argmax> <margin>"

where the log-probability is of prompt[i] given prompt[:i], the argmax is the most likely token
at that position, and the margin is how far (in log-probability) the runner-up trails it, so
that a top-1 disagreement on a near tie can be told from a wrong model.

The modelling follows transformers' published code for each architecture (LlamaForCausalLM,
MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM,
Phi3ForCausalLM):
pre-norm decoder layers, RMSNorm, rotary embeddings on half-split pairs, grouped-query attention
with an optional sliding window, a gated MLP. Gemma adds norms after attention and after the MLP,
RMSNorm weights used as 1 + w, GELU (tanh approximation), embeddings scaled by √hidden in the
checkpoint's type, scores scaled by query_pre_attn_scalar^-½, soft-capped scores and logits
(Gemma 2), per-head Q/K norms and windowed layers rotating with their own base (Gemma 3). Phi-3
fuses Q/K/V and gate/up into one matrix each and may scale its rotation by LongRoPE: per forward
call, the long factors when it reaches past original_max_position_embeddings, else the short ones,
with cos and sin multiplied by the attention factor. Mixtral and Qwen3-MoE route each token to
the top-k experts of a softmax over the router's logits, weighted by their probabilities
(renormalised for Mixtral, and for Qwen3-MoE with norm_topk_prob), each expert a SiLU-gated MLP.
"""

import argparse
import json
import math
import os
import struct

import numpy as np

# --- weights -------------------------------------------------------------------------------------


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (header_len,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + header_len])
    base = 8 + header_len
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = blob[base + start:base + end]
        if info["dtype"] == "F32":
            values = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif info["dtype"] == "F16":
            values = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            values = bits.view(np.float32).astype(np.float64)
        else:
            raise SystemExit("%s: tensor %s has dtype %s, not a float type" % (path, name, info["dtype"]))
        out[name] = values.reshape(info["shape"])
    return out


def read_weights(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        return read_safetensors(os.path.join(folder, "model.safetensors"))
    with open(index) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    weights = {}
    for name in files:
        weights.update(read_safetensors(os.path.join(folder, name)))
    return weights

# --- the model -----------------------------------------------------------------------------------


class Model:
    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.config = c = json.load(f)
        self.w = read_weights(folder)
        self.arch = c["architectures"][0]
        known = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
                 "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM", "MixtralForCausalLM",
                 "Qwen3MoeForCausalLM")
        if self.arch not in known:
            raise SystemExit("hf_reference: %s is not modelled here" % self.arch)
        self.gemma = self.arch.startswith("Gemma")
        self.hidden = c["hidden_size"]
        self.layers = c["num_hidden_layers"]
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads") or self.heads
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.eps = c.get("rms_norm_eps", 1e-6)
        self.qk_norm = self.arch in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "Gemma3ForCausalLM")
        self.norm_offset = 1.0 if self.gemma else 0.0
        self.scale = (c.get("query_pre_attn_scalar") or self.head_dim) ** -0.5 if self.gemma \
            else self.head_dim ** -0.5
        self.attn_softcap = c.get("attn_logit_softcapping") if self.gemma else None
        self.final_softcap = c.get("final_logit_softcapping") if self.gemma else None
        self.windows = [self.window_of(i) for i in range(self.layers)]
        base = c.get("rope_theta", 10000.0)
        self.inv_freq = self.rope_inverse_frequencies(base, c.get("rope_scaling"))
        self.local_inv_freq = self.inv_freq
        if self.arch == "Gemma3ForCausalLM":  # windowed layers: their own base, no scaling
            self.local_inv_freq = self.rope_inverse_frequencies(c.get("rope_local_base_freq", 10000.0), None)

    def window_of(self, layer):
        """Tokens a layer's query sees (itself included); None = all earlier ones."""
        c = self.config
        if self.arch in ("MistralForCausalLM", "Phi3ForCausalLM", "MixtralForCausalLM"):
            return c.get("sliding_window")
        if self.arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"):
            if c.get("use_sliding_window") and layer >= c.get("max_window_layers", 28):
                return c.get("sliding_window")
        if self.gemma:
            if "layer_types" in c:
                sliding = c["layer_types"][layer] == "sliding_attention"
            else:
                pattern = 2 if self.arch == "Gemma2ForCausalLM" else c.get("sliding_window_pattern", 6)
                sliding = (layer + 1) % pattern != 0
            return c.get("sliding_window", 4096) if sliding else None
        return None

    def rope_inverse_frequencies(self, base, scaling):
        d = self.head_dim
        inv = 1.0 / base ** (np.arange(0, d, 2, dtype=np.float64) / d)
        scaling = scaling or {}
        kind = scaling.get("rope_type", scaling.get("type", "default"))
        if kind == "linear":
            inv = inv / scaling["factor"]
        elif kind == "llama3":
            factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
            old = scaling["original_max_position_embeddings"]
            wavelen = 2 * math.pi / inv
            smooth = (old / wavelen - lo) / (hi - lo)
            blended = (1 - smooth) * inv / factor + smooth * inv
            inv = np.where(wavelen < old / hi, inv, np.where(wavelen > old / lo, inv / factor, blended))
        elif kind in ("longrope", "su"):
            return self.longrope(inv)
        elif kind != "default":
            raise SystemExit("hf_reference: rope type %s is not modelled here" % kind)
        return inv

    def longrope(self, inv):
        """transformers' _compute_longrope_parameters: (inv_freq for short, for long, the original
        context, the attention factor)."""
        c, scaling = self.config, self.config["rope_scaling"]
        if "original_max_position_embeddings" in c:
            original = c["original_max_position_embeddings"]
            factor = c["max_position_embeddings"] / original
        else:
            original, factor = c["max_position_embeddings"], scaling["factor"]
        af = scaling.get("attention_factor")
        if af is None:
            af = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
        self.longrope_parts = (inv / np.array(scaling["short_factor"], dtype=np.float64),
                               inv / np.array(scaling["long_factor"], dtype=np.float64), original, af)
        return None  # chosen per forward call

    def rmsnorm(self, x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * (self.norm_offset + weight)

    def embedding_scale(self):
        """Gemma's normalizer: √hidden as a tensor of the hidden states' type."""
        if not self.gemma:
            return 1.0
        exact = np.float32(math.sqrt(self.hidden))
        kind = self.config.get("torch_dtype", self.config.get("dtype", "float32"))
        if kind == "bfloat16":
            bits = int(np.array([exact]).view(np.uint32)[0])
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            return float(np.array([bits], dtype=np.uint32).view(np.float32)[0])
        if kind == "float16":
            return float(np.float16(exact))
        return float(exact)

    def activation(self, gate):
        if self.gemma:  # gelu_pytorch_tanh
            return 0.5 * gate * (1 + np.tanh(math.sqrt(2 / math.pi) * (gate + 0.044715 * gate ** 3)))
        return gate / (1 + np.exp(-gate))

    def linear(self, name, x):
        y = x @ self.w[name + ".weight"].T
        bias = self.w.get(name + ".bias")
        return y if bias is None else y + bias

    def rope(self, x, positions, inv_freq):
        """x: [tokens, heads, head_dim]; rotates (i, i + head_dim/2) pairs (rotate_half)."""
        scale = 1.0
        if inv_freq is None:  # LongRoPE: by the furthest position of this forward call
            short, long, original, scale = self.longrope_parts
            inv_freq = long if positions.max() + 1 > original else short
        angles = positions[:, None].astype(np.float64) * inv_freq[None, :]
        cos, sin = np.cos(angles)[:, None, :] * scale, np.sin(angles)[:, None, :] * scale
        half = self.head_dim // 2
        a, b = x[..., :half], x[..., half:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)

    def sparse(self, layer):
        c = self.config
        if self.arch == "MixtralForCausalLM":
            return True
        if self.arch == "Qwen3MoeForCausalLM":
            return layer not in c.get("mlp_only_layers", []) and (layer + 1) % c.get("decoder_sparse_step", 1) == 0
        return False

    def experts(self, p, x):
        """A mixture-of-experts MLP (transformers' MixtralSparseMoeBlock, Qwen3MoeSparseMoeBlock)."""
        c = self.config
        mixtral = self.arch == "MixtralForCausalLM"
        block = p + ("block_sparse_moe." if mixtral else "mlp.")
        k = c["num_experts_per_tok"]
        logits = x @ self.w[block + "gate.weight"].T
        probs = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        out = np.zeros_like(x)
        for t in range(x.shape[0]):
            picked = np.argsort(-probs[t], kind="stable")[:k]
            weights = probs[t, picked]
            if mixtral or c.get("norm_topk_prob"):
                weights = weights / weights.sum()
            for e, w in zip(picked, weights):
                x_name = block + "experts.%d." % e
                if mixtral:
                    gate = x[t] @ self.w[x_name + "w1.weight"].T
                    up = x[t] @ self.w[x_name + "w3.weight"].T
                    out[t] += w * (self.activation(gate) * up) @ self.w[x_name + "w2.weight"].T
                else:
                    gate = x[t] @ self.w[x_name + "gate_proj.weight"].T
                    up = x[t] @ self.w[x_name + "up_proj.weight"].T
                    out[t] += w * (self.activation(gate) * up) @ self.w[x_name + "down_proj.weight"].T
        return out

    def attention(self, layer, q, keys, values, positions):
        """q: [t, heads, d] at `positions`; keys, values: [T, kv_heads, d] for positions 0..T-1."""
        group = self.heads // self.kv_heads
        k = np.repeat(keys, group, axis=1)
        v = np.repeat(values, group, axis=1)
        scores = np.einsum("thd,shd->hts", q, k) * self.scale
        if self.attn_softcap:
            scores = self.attn_softcap * np.tanh(scores / self.attn_softcap)
        seen = np.arange(keys.shape[0])[None, :]
        allowed = seen <= positions[:, None]
        window = self.windows[layer]
        if window:
            allowed &= seen > positions[:, None] - window
        scores = np.where(allowed[None, :, :], scores, -np.inf)
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        return np.einsum("hts,shd->thd", p, v)

    def forward(self, tokens, cache):
        """Logits [len(tokens), vocab] of `tokens` following the cache's; appends their K/V."""
        t = len(tokens)
        start = cache["length"]
        positions = np.arange(start, start + t)
        h = self.w["model.embed_tokens.weight"][np.array(tokens)] * self.embedding_scale()
        for i in range(self.layers):
            p = "model.layers.%d." % i
            x = self.rmsnorm(h, self.w[p + "input_layernorm.weight"])
            if self.arch == "Phi3ForCausalLM":
                qkv = self.linear(p + "self_attn.qkv_proj", x)
                nq, nkv = self.heads * self.head_dim, self.kv_heads * self.head_dim
                q, k, v = qkv[:, :nq], qkv[:, nq:nq + nkv], qkv[:, nq + nkv:]
            else:
                q = self.linear(p + "self_attn.q_proj", x)
                k = self.linear(p + "self_attn.k_proj", x)
                v = self.linear(p + "self_attn.v_proj", x)
            q = q.reshape(t, self.heads, self.head_dim)
            k = k.reshape(t, self.kv_heads, self.head_dim)
            v = v.reshape(t, self.kv_heads, self.head_dim)
            if self.qk_norm:
                q = self.rmsnorm(q, self.w[p + "self_attn.q_norm.weight"])
                k = self.rmsnorm(k, self.w[p + "self_attn.k_norm.weight"])
            inv_freq = self.local_inv_freq if self.windows[i] else self.inv_freq
            q, k = self.rope(q, positions, inv_freq), self.rope(k, positions, inv_freq)
            keys = cache["k"][i] = np.concatenate([cache["k"][i], k]) if start else k
            values = cache["v"][i] = np.concatenate([cache["v"][i], v]) if start else v
            attn = self.linear(p + "self_attn.o_proj", self.attention(i, q, keys, values, positions).reshape(t, -1))
            if self.gemma:
                h = h + self.rmsnorm(attn, self.w[p + "post_attention_layernorm.weight"])
                x = self.rmsnorm(h, self.w[p + "pre_feedforward_layernorm.weight"])
            else:
                h = h + attn
                x = self.rmsnorm(h, self.w[p + "post_attention_layernorm.weight"])
            if self.sparse(i):
                mlp = self.experts(p, x)
            else:
                if self.arch == "Phi3ForCausalLM":
                    gate, up = np.split(self.linear(p + "mlp.gate_up_proj", x), 2, axis=-1)
                else:
                    gate = self.linear(p + "mlp.gate_proj", x)
                    up = self.linear(p + "mlp.up_proj", x)
                mlp = self.linear(p + "mlp.down_proj", self.activation(gate) * up)
            if self.gemma:
                mlp = self.rmsnorm(mlp, self.w[p + "post_feedforward_layernorm.weight"])
            h = h + mlp
        cache["length"] = start + t
        x = self.rmsnorm(h, self.w["model.norm.weight"])
        head = self.w.get("lm_head.weight")
        if head is None or self.config.get("tie_word_embeddings"):
            head = self.w["model.embed_tokens.weight"]
        logits = x @ head.T
        if self.final_softcap:
            logits = self.final_softcap * np.tanh(logits / self.final_softcap)
        return logits

    def new_cache(self):
        return {"length": 0, "k": [None] * self.layers, "v": [None] * self.layers}

# --- main ----------------------------------------------------------------------------------------


def log_softmax(logits):
    top = logits.max(axis=-1, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True, help="a Hugging Face folder")
    p.add_argument("--prompt-len", type=int, default=520)
    p.add_argument("--greedy", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--first-id", type=int, default=3,
                   help="prompt ids are drawn from [first-id, vocab - unused)")
    p.add_argument("--unused", type=int, default=2, help="ids at the vocabulary's end left out")
    p.add_argument("--out", required=True)
    a = p.parse_args()

    model = Model(a.model)
    vocab = model.w["model.embed_tokens.weight"].shape[0]
    rng = np.random.default_rng(a.seed)
    prompt = [int(x) for x in rng.integers(a.first_id, vocab - a.unused, size=a.prompt_len)]

    cache = model.new_cache()
    logprobs = log_softmax(model.forward(prompt, cache))
    greedy = [int(np.argmax(logprobs[-1]))]
    for _ in range(a.greedy - 1):
        greedy.append(int(np.argmax(model.forward([greedy[-1]], cache)[-1])))

    lines = ["prompt " + " ".join(map(str, prompt)), "greedy " + " ".join(map(str, greedy))]
    for i in range(1, len(prompt)):
        row = logprobs[i - 1]
        order = np.argsort(row)
        lines.append("%.12g %d %.6g" % (row[prompt[i]], order[-1], row[order[-1]] - row[order[-2]]))
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
