"""LLM architectures: one frozen record per model, with parameter counts from the shapes.

Parameter counts assume the Llama-family block: RMSNorm (one weight vector per norm),
SwiGLU MLP (gate, up and down projections: 3 x hidden x intermediate), grouped-query
attention (or DeepSeek's multi-head latent attention), untied input embedding and LM head
unless `tie_embeddings`. Mixture-of-experts layers hold `experts` routed SwiGLU experts,
`shared_experts` always-on experts and a linear router (hidden x experts).

Hybrid models (Qwen3.5, Qwen3-Next) replace the attention of `linear_attention_layers`
layers by a Gated DeltaNet linear-attention mixer, whose weights are counted from its
head shapes (`linear_attention_params_per_layer`); its fixed-size recurrent state is not a
per-token KV cache (see the catalog entry's notes for how the KV model approximates it).

Not counted (each under 0.1% of the weights of the models in the catalog): biases other
than q/k/v, attention sinks (one scalar per head), q/k norms, router biases, a shared
expert's sigmoid gate (hidden x 1).
"""

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.physics.precision import Precision
from models.schema.quantities import Layers, ParamsB, Shape, TokenCount


class Attention(StrEnum):
    """Attention variant, which decides the KV-cache layout."""

    GQA = "gqa"
    MLA = "mla"


class LlmSpec(BaseModel):
    """One model's architecture as its config.json gives it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """Catalog key, e.g. `llama-3.3-70b`."""
    display_name: str = ""
    """Name shown in reports; default: the catalog key."""
    layers: Layers
    """Transformer blocks (num_hidden_layers)."""
    hidden_size: Shape = Field(gt=0)
    """Model width (hidden_size): the residual stream's size."""
    intermediate_size: Shape = Field(gt=0)
    """Dense SwiGLU MLP width (also the dense layers of an MoE model)."""
    attention_heads: Shape = Field(gt=0)
    """Query heads per layer (num_attention_heads)."""
    kv_heads: Shape = Field(gt=0)
    """Key/value heads (GQA groups); equal to attention_heads for MHA."""
    head_dim: Shape = Field(gt=0)
    """Width of one attention head (head_dim)."""
    vocab_size: Shape = Field(gt=0)
    """Tokens in the vocabulary (embedding and LM-head rows)."""
    tie_embeddings: bool = False
    """Whether the LM head shares the embedding's weights."""
    max_context_tokens: TokenCount
    """Longest context the model accepts (max_position_embeddings)."""
    attention: Attention = Attention.GQA
    """Attention kind: mha, gqa or mla (sets the KV-cache shape)."""
    qkv_bias: bool = False
    """Whether the Q, K and V projections carry a bias."""
    experts: Shape = 0
    """Routed experts per MoE layer; 0 for a dense model."""
    experts_per_token: Shape = 0
    """Routed experts each token uses (top-k); 0 for a dense model."""
    shared_experts: Shape = 0
    """Experts every token uses beside the routed ones."""
    moe_intermediate_size: Shape = 0
    """MLP width of one expert."""
    first_dense_layers: Shape = 0
    """Leading layers with a dense MLP in an MoE model."""
    moe_layer_step: Shape = Field(default=1, ge=1)
    """After the leading dense layers, every `moe_layer_step`-th layer is MoE and the rest
    are dense (Llama 4 Maverick's interleave_moe_layer_step 2; 1: every layer is MoE)."""
    expert_weight_precision: Precision | None = None
    """Storage precision the checkpoint fixes for the routed and shared experts (GPT-OSS
    ships MXFP4 experts, dequantised in the expert GEMMs on GPUs without FP4 tensor
    cores); None: experts are stored like every other linear layer."""
    sliding_window_tokens: Shape = 0
    """Window of the layers that attend only to recent tokens (GPT-OSS sliding window 128;
    Llama 4 chunked attention over attention_chunk_size 8192, taken as a window: a chunk
    layer holds at most one chunk of KV and reads at most one chunk per token); 0: none."""
    sliding_window_layers: Shape = 0
    """Layers with windowed attention; the other layers attend to the whole context."""
    window_is_chunked: bool = False
    """Whether the windowed layers attend within fixed chunks of `sliding_window_tokens`
    (Llama 4's attention_chunk_size: a token at position p sees the p mod chunk tokens
    of its own chunk) rather than a window sliding over the last tokens."""
    q_lora_rank: Shape = 0
    """MLA: rank of the query compression; 0 without one."""
    kv_lora_rank: Shape = 0
    """MLA: rank of the compressed KV (the latent cached per token)."""
    qk_nope_head_dim: Shape = 0
    """MLA: per-head query/key width without rotary embedding."""
    qk_rope_head_dim: Shape = 0
    """MLA: per-head query/key width with rotary embedding."""
    v_head_dim: Shape = 0
    """MLA: per-head value width."""
    qk_norm_across_heads: bool = False
    """Whether the q and k RMSNorms run over the whole projection (every head of the
    layer: MiniMax-M2's `use_qk_norm` with `qk_norm_type: per_layer`), not per head. Under
    tensor parallelism each GPU holds some heads, so every layer all-reduces the rows' sums
    of squares before normalising: one more (latency-bound) all-reduce per layer."""
    attention_output_gate: bool = False
    """Whether the full-attention q projection also emits a sigmoid output gate of the same
    width (heads x head_dim more outputs; Qwen3.5 and Qwen3-Next `attn_output_gate`)."""
    linear_attention_layers: Shape = 0
    """Layers whose token mixer is a Gated DeltaNet linear attention (a recurrent state
    of fixed size per sequence, no KV cache) instead of attention; 0: none."""
    linear_key_heads: Shape = 0
    """Linear attention: query/key heads (linear_num_key_heads)."""
    linear_value_heads: Shape = 0
    """Linear attention: value heads (linear_num_value_heads)."""
    linear_key_head_dim: Shape = 0
    """Linear attention: width of one query/key head (linear_key_head_dim)."""
    linear_value_head_dim: Shape = 0
    """Linear attention: width of one value head (linear_value_head_dim)."""
    linear_conv_kernel: Shape = 0
    """Linear attention: taps of the causal depthwise convolution over q, k and v
    (linear_conv_kernel_dim)."""
    published_params_b: ParamsB
    """Total parameters as published, billions."""
    published_active_params_b: ParamsB
    """Parameters used per token as published, billions."""
    sources: dict[str, str] = Field(default_factory=dict)
    """Where each number comes from: field -> URL or document."""

    @model_validator(mode="after")
    def _shapes_consistent(self) -> "LlmSpec":
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"attention_heads ({self.attention_heads}) must be a multiple of "
                f"kv_heads ({self.kv_heads})"
            )
        if self.is_moe and (self.experts_per_token == 0 or self.moe_intermediate_size == 0):
            raise ValueError("an MoE model needs experts_per_token and moe_intermediate_size")
        if self.experts_per_token > self.experts:
            raise ValueError("experts_per_token cannot exceed experts")
        if self.attention is Attention.MLA and (self.kv_lora_rank == 0 or self.v_head_dim == 0):
            raise ValueError("MLA attention needs kv_lora_rank, qk_*_head_dim and v_head_dim")
        if self.first_dense_layers > self.layers or self.sliding_window_layers > self.layers:
            raise ValueError("first_dense_layers and sliding_window_layers cannot exceed layers")
        if (self.sliding_window_tokens == 0) != (self.sliding_window_layers == 0):
            raise ValueError("sliding_window_tokens and sliding_window_layers go together")
        if self.linear_attention_layers >= self.layers:
            raise ValueError("linear_attention_layers must leave some full-attention layers")
        linear_shapes = (
            self.linear_key_heads,
            self.linear_value_heads,
            self.linear_key_head_dim,
            self.linear_value_head_dim,
            self.linear_conv_kernel,
        )
        if self.linear_attention_layers and not all(linear_shapes):
            raise ValueError(
                "linear_attention_layers needs linear_key_heads, linear_value_heads, "
                "linear_key_head_dim, linear_value_head_dim and linear_conv_kernel"
            )
        return self

    @property
    def is_moe(self) -> bool:
        """Whether the MLP of some layers is a mixture of experts."""
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts:
        (layers - first_dense_layers) // moe_layer_step."""
        if not self.is_moe:
            return 0
        return (self.layers - self.first_dense_layers) // self.moe_layer_step

    @property
    def dense_mlp_layers(self) -> int:
        """Layers whose MLP is a dense SwiGLU."""
        return self.layers - self.moe_layers

    # --- parameter counts (elements, not bytes) -----------------------------------------

    @property
    def full_attention_layers(self) -> int:
        """Layers with softmax attention (and a KV cache): layers - linear_attention_layers."""
        return self.layers - self.linear_attention_layers

    def attention_params_per_layer(self) -> int:
        """Attention projection weights (plus biases and latent norms) in one full-attention
        layer.

        GQA: q and o are hidden x heads*head_dim, k and v are hidden x kv_heads*head_dim;
        an output gate doubles q (hidden x 2*heads*head_dim).
        MLA: q down (hidden x q_lora) and up (q_lora x heads*(nope+rope)); kv down
        (hidden x (kv_lora+rope)) and up (kv_lora x heads*(nope+v)); o (heads*v x hidden);
        RMSNorm vectors on both latents.
        """
        h = self.hidden_size
        if self.attention is Attention.MLA:
            qk_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank * self.attention_heads * qk_dim
                q += self.q_lora_rank
            else:
                q = h * self.attention_heads * qk_dim
            kv = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv += (
                self.kv_lora_rank * self.attention_heads * (self.qk_nope_head_dim + self.v_head_dim)
            )
            o = self.attention_heads * self.v_head_dim * h
            return q + kv + o
        q_out = self.attention_heads * self.head_dim
        kv_out = self.kv_heads * self.head_dim
        gate_out = q_out if self.attention_output_gate else 0
        params = h * (q_out + gate_out) + 2 * h * kv_out + q_out * h
        if self.qkv_bias:
            params += q_out + 2 * kv_out
        return params

    def linear_attention_params_per_layer(self) -> int:
        """Gated DeltaNet weights in one linear-attention layer (0 without any):
        in_proj_qkv hidden x conv_dim, with conv_dim = 2 x key_heads x key_dim
        + value_heads x value_dim; in_proj_z hidden x value_heads x value_dim; in_proj_a and
        in_proj_b hidden x value_heads each; depthwise conv conv_dim x kernel; A_log and
        dt_bias value_heads each; gated RMSNorm value_dim; out_proj value_heads x value_dim
        x hidden."""
        if self.linear_attention_layers == 0:
            return 0
        h = self.hidden_size
        key_width = self.linear_key_heads * self.linear_key_head_dim
        value_width = self.linear_value_heads * self.linear_value_head_dim
        conv_dim = 2 * key_width + value_width
        projections = h * conv_dim + h * value_width + 2 * h * self.linear_value_heads
        conv = conv_dim * self.linear_conv_kernel
        per_head = 2 * self.linear_value_heads + self.linear_value_head_dim
        return projections + conv + per_head + value_width * h

    def attention_params_total(self) -> int:
        """Token-mixer weights of all layers: full-attention layers x
        `attention_params_per_layer` + linear-attention layers x
        `linear_attention_params_per_layer`."""
        return (
            self.full_attention_layers * self.attention_params_per_layer()
            + self.linear_attention_layers * self.linear_attention_params_per_layer()
        )

    def dense_mlp_params(self) -> int:
        """One dense SwiGLU MLP: 3 x hidden x intermediate."""
        return 3 * self.hidden_size * self.intermediate_size

    def expert_params(self) -> int:
        """One expert's SwiGLU MLP: 3 x hidden x moe_intermediate."""
        return 3 * self.hidden_size * self.moe_intermediate_size

    def moe_layer_params(self) -> int:
        """One MoE MLP: routed and shared experts plus the router."""
        return (self.experts + self.shared_experts) * self.expert_params() + (
            self.hidden_size * self.experts
        )

    def expert_params_total(self) -> int:
        """Routed plus shared expert weights over all MoE layers (not the routers)."""
        return self.moe_layers * (self.experts + self.shared_experts) * self.expert_params()

    def embedding_params(self) -> int:
        """Input embedding plus the LM head (counted once when tied)."""
        copies = 1 if self.tie_embeddings else 2
        return copies * self.vocab_size * self.hidden_size

    def norm_params(self) -> int:
        """Two RMSNorm vectors per layer plus the final norm."""
        return (2 * self.layers + 1) * self.hidden_size

    def total_params(self) -> int:
        """All weights, counted from the shapes."""
        return (
            self.attention_params_total()
            + self.dense_mlp_layers * self.dense_mlp_params()
            + self.moe_layers * self.moe_layer_params()
            + self.embedding_params()
            + self.norm_params()
        )

    def active_params(self) -> int:
        """Weights one token passes through: only `experts_per_token` routed experts."""
        if not self.is_moe:
            return self.total_params()
        active_moe = (self.experts_per_token + self.shared_experts) * self.expert_params() + (
            self.hidden_size * self.experts
        )
        return (
            self.total_params()
            - self.moe_layers * self.moe_layer_params()
            + self.moe_layers * active_moe
        )

    # --- KV cache ------------------------------------------------------------------------

    def kv_elements_per_token_per_layer(self) -> int:
        """KV-cache elements one token stores in one layer (all heads, no TP split).

        GQA: K and V for every KV head, 2 x kv_heads x head_dim.
        MLA: the compressed latent plus the decoupled RoPE key, kv_lora_rank + qk_rope_head_dim.
        """
        if self.attention is Attention.MLA:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_heads * self.head_dim

    def kv_layers_at_context(self, context_tokens: float) -> float:
        """Layers' worth of KV one sequence of `context_tokens` tokens holds, per token:
        full layers + window layers x min(1, window / context).

        Equals `layers` for a model without windowed layers. The KV cache one sequence
        holds is `kv_bytes_per_token` x context x this / layers
        (`models.physics.memory.windowed_kv_share`): the engine keeps a window layer's KV
        in a buffer of `sliding_window_tokens` (TensorRT-LLM's per-layer
        max_attention_window, vLLM's sliding-window and chunked-local KV specs). What a
        step reads: `models.physics.step_time.StepModel.attention_chunk_tokens`.
        """
        if self.sliding_window_layers == 0 or context_tokens <= self.sliding_window_tokens:
            return float(self.layers)
        window_share = self.sliding_window_tokens / context_tokens
        full_layers = self.layers - self.sliding_window_layers
        return full_layers + self.sliding_window_layers * window_share
