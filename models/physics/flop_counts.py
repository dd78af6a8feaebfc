"""FLOP and parameter counts of a transformer forward pass, the whole model on one GPU.

Per token, 2 x active parameters of linear FLOPs (a multiply-add each; the input embedding
is a lookup, not a matrix multiply; the LM head runs for decode tokens and for the last
prompt token only) and, per (query, key) pair, 2 x heads x (d_qk + d_v) attention FLOPs: a
causal prefill of P tokens has P^2/2 pairs per layer. A mixture-of-experts layer reads only
the experts its tokens route to: E (1 - (1 - k/E)^T) of E for T tokens routed to k each
(uniform routing). `models.physics.step_time` splits these counts over the GPUs of a replica.
"""

from models.physics.llm import Attention, LlmSpec


def body_params(llm: LlmSpec) -> int:
    """Active parameters that do matrix multiplies for every token: active parameters
    minus the input embedding and the LM head."""
    return llm.active_params() - llm.embedding_params()


def lm_head_params(llm: LlmSpec) -> int:
    """The LM head: vocab x hidden."""
    return llm.vocab_size * llm.hidden_size


def attention_flops_per_pair(llm: LlmSpec, decode: bool) -> int:
    """Attention FLOPs of one query token against one cached token, all layers:
    2 x heads x (d_qk + d_v) x layers (QK^T and PV, a multiply-add each).

    MLA prefill uses the expanded heads (d_qk = nope + rope, d_v = v_head_dim); MLA decode
    runs absorbed over the latent (d_qk = kv_lora + rope, d_v = kv_lora).
    """
    if llm.attention is Attention.MLA:
        if decode:
            d_qk = llm.kv_lora_rank + llm.qk_rope_head_dim
            d_v = llm.kv_lora_rank
        else:
            d_qk = llm.qk_nope_head_dim + llm.qk_rope_head_dim
            d_v = llm.v_head_dim
    else:
        d_qk = d_v = llm.head_dim
    return 2 * llm.attention_heads * (d_qk + d_v) * llm.layers


def prefill_flops(llm: LlmSpec, tokens: float, cached_tokens: float = 0.0) -> float:
    """FLOPs to prefill `tokens` new tokens after `cached_tokens` already in the KV cache:
    2 x body_params x tokens + 2 x lm_head (the last token's logits)
    + attention_flops_per_pair x (tokens x cached + tokens^2 / 2) (causal)."""
    linear = 2 * body_params(llm) * tokens + 2 * lm_head_params(llm)
    pairs = tokens * cached_tokens + tokens * tokens / 2
    return linear + attention_flops_per_pair(llm, decode=False) * pairs


def decode_flops(llm: LlmSpec, batch: float, context_tokens: float) -> float:
    """FLOPs of one decode step: batch x (2 x (body + LM head) + attention over context)."""
    per_token = 2 * (body_params(llm) + lm_head_params(llm))
    return batch * (per_token + attention_flops_per_pair(llm, decode=True) * context_tokens)


def expected_experts_touched(experts: int, experts_per_token: int, tokens: float) -> float:
    """Expected distinct experts that `tokens` tokens route to, each picking
    `experts_per_token` of `experts` uniformly: E (1 - (1 - k/E)^T)."""
    if experts == 0 or tokens <= 0:
        return 0.0
    return experts * (1 - (1 - experts_per_token / experts) ** tokens)
