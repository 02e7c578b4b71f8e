#pragma once
// The description of a decoder-only transformer (dense, MoE, MLA) and what follows from it alone:
// its parameter count and its FLOPs per token. Parallelism, memory and time are computed
// elsewhere from these numbers.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::models {

/// swiglu and quick_geglu are gated (gate, up and down matrices); gelu and squared_relu have up
/// and down only. quick_geglu is GPT-OSS's gate x sigmoid(1.702 x) (a quick GELU, not SiLU) times
/// (up + 1), clamped: the same matrices as SwiGLU, counted apart where a FLOP formula tells
/// SiLU from other gates.
enum class MlpKind { gelu, swiglu, squared_relu, quick_geglu };

/// "gelu", "swiglu", "squared_relu" or "quick_geglu", as written in JSON.
const char* mlp_kind_name(MlpKind kind);

/// How a model tells positions apart, which decides the kernels around attention:
/// - rope: rotary embeddings applied to every query and key head (Llama, Qwen, Nemotron, Mistral;
///   MLA rotates only its decoupled rope dimensions), one fused kernel each in Transformer Engine;
/// - yarn: rotary embeddings with YaRN's attention scaling (GPT-OSS; Megatron-Core's
///   position_embedding_type "yarn"), whose scale Megatron-Core's fused kernel does not apply, so
///   Megatron stacks run its PyTorch rotary;
/// - learned: absolute position embeddings added to the token embeddings (GPT-2/3, Megatron-LM's
///   default learned_absolute): nothing at the attention;
/// - alibi: a per-head linear bias the attention kernel adds to its scores (BLOOM, MPT-7B as
///   released): no op of its own.
enum class PositionEncoding { rope, yarn, learned, alibi };

/// "rope", "yarn", "learned" or "alibi", as written in JSON.
const char* position_encoding_name(PositionEncoding encoding);
/// The encoding of that name, nullopt for none.
std::optional<PositionEncoding> position_encoding_from(std::string_view name);
/// The names position_encoding_from accepts, in declaration order.
std::vector<std::string> position_encoding_names();
/// Whether the MLP has a gate matrix beside its up matrix.
bool is_gated(MlpKind kind);

struct MoeConfig;
/// Tokens the simulated (most loaded) rank's experts process, over the balanced mean.
double moe_rank_load(const MoeConfig& moe);

struct MoeConfig {
  int experts = 0;  ///< routed experts per MoE layer
  int top_k = 0;    ///< routed experts each token visits
  int expert_ffn = 0;
  int shared_experts = 0;  ///< always-active experts (DeepSeek)
  int shared_expert_ffn = 0;
  int dense_layers = 0;    ///< leading layers with a dense MLP of `ffn`
  int moe_layer_freq = 1;  ///< after those, layer i is MoE when i % moe_layer_freq == 0
  /// 0 = dropless (Megatron-Core's default, moe_expert_capacity_factor None); > 0: tokens over
  /// capacity are dropped and every expert's buffer is padded to capacity.
  double capacity_factor = 0;
  /// Dropless routing: tokens the most loaded expert-parallel rank receives over the mean (1 =
  /// balanced, as benchmarks force it; real routing with a balancing loss runs above 1). With
  /// a capacity factor every rank's buffers hold capacity x the mean instead.
  double load_imbalance = 1.0;
  bool router_aux_free = false;  ///< load balancing by router bias instead of an aux loss
  /// Experts' linear layers carry biases (GPT-OSS). Megatron-Core adds fc2's bias after the
  /// grouped GEMM, weighted by the router probability, one expert at a time in PyTorch.
  bool expert_bias = false;
  friend bool operator==(const MoeConfig&, const MoeConfig&) = default;
};

/// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values pass through low-rank
/// projections, and q/k heads carry a separate RoPE part.
struct MlaConfig {
  int q_lora_rank = 0;  ///< 0 = queries are not compressed
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  friend bool operator==(const MlaConfig&, const MlaConfig&) = default;
};

struct TransformerConfig {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int ffn = 0;  ///< dense MLP width (the dense layers of an MoE model)
  int heads = 0;
  int kv_heads = 0;
  /// Per-head width of q/k/v; hidden/heads unless the model says otherwise. Unused with MLA.
  int head_dim = 0;
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = false;
  MlpKind mlp = MlpKind::gelu;
  bool bias = false;  ///< linear-layer biases, and LayerNorm biases, as in GPT-2/3 and Megatron GPT
  /// Multi-token prediction depth (DeepSeek-V3, arXiv:2412.19437 sec. 2.2; Megatron-Core's
  /// mtp_num_layers): each module normalizes the last hidden state and the embedding of the
  /// next token, projects their concatenation from 2h to h (eh_proj), runs one transformer layer
  /// of the last layer's kind and predicts one token further through the shared output head.
  int mtp_layers = 0;
  /// RMSNorm over each query and key head before attention (QK-norm: Qwen3, OLMo 2, Gemma 3;
  /// Megatron-Core's qk_layernorm). Not with MLA, whose latents have their own norms.
  bool qk_norm = false;
  /// Sliding-window (banded causal) attention: a query attends to itself and the `sliding_window`
  /// tokens before it (0 = every layer attends to the whole sequence). GPT-OSS: 128, Mistral 7B
  /// v0.1: 4096; Megatron-Core's window_size (sliding_window, 0).
  int sliding_window = 0;
  /// With a window, every `full_attention_every`-th layer (layers N-1, 2N-1, ...) attends to the
  /// whole sequence instead (GPT-OSS: 2, alternating; Gemma 3: 6); 0 = every layer is banded.
  /// Megatron-Core's window_attn_skip_freq.
  int full_attention_every = 0;
  PositionEncoding position = PositionEncoding::rope;
  std::optional<MoeConfig> moe;
  std::optional<MlaConfig> mla;
  std::string source;  ///< where the dimensions come from
  friend bool operator==(const TransformerConfig&, const TransformerConfig&) = default;
};

/// Whether layer `layer` (0-based) has a routed-expert MLP: the first dense_layers are dense, and
/// after them every layer whose index is a multiple of moe_layer_freq (the indexing of DeepSeek's
/// and Megatron's configs). Throws std::out_of_range for a layer outside the model.
bool is_moe_layer(const TransformerConfig& config, int layer);
/// How many layers have routed experts.
int moe_layer_count(const TransformerConfig& config);
/// Whether layer `layer` (0-based) attends through the sliding window. Throws std::out_of_range
/// for a layer outside the model.
bool is_windowed_layer(const TransformerConfig& config, int layer);
/// Keys a query attends to on average over a sequence of `span` tokens through a window of
/// `window` tokens on each side (0 = no window), before any causal halving: each query sees
/// [i - w, i + w] within the sequence, 2w - w^2/span of them on average (span when w >= span).
/// A causal banded layer attends half of it, as a causal full layer attends half the span.
double windowed_span(double span, double window);

/// Weights of one MLA layer's up projections, which expand the compressed latents: the queries
/// (none without a query latent) and the keys and values. What Megatron-Core's mla_up_proj
/// recomputation reruns.
struct MlaUpProjections {
  double q = 0;
  double kv = 0;
};
MlaUpProjections mla_up_projections(const MlaConfig& mla, int heads);

struct ParameterCount {
  double total = 0;
  /// Used by one token: MoE counts top_k routed experts plus the shared ones. Embeddings included
  /// (the convention of Mixtral's 12.9B and DeepSeek-V3's 37B).
  double active = 0;
  double embedding = 0;  ///< input embedding, plus the output layer when untied
  double attention = 0;
  double mlp_dense = 0;    ///< dense-layer MLPs and shared experts
  double mlp_experts = 0;  ///< all routed experts
  double router = 0;
  double norms = 0;
  /// The multi-token-prediction modules (their layer, eh_proj and norms; the embedding and the
  /// output head are shared), outside `total` as DeepSeek-V3's published 671B leaves its 14B
  /// MTP module out (that 14B counts its own copy of the embedding and the head).
  double mtp = 0;
};

/// Learned position embeddings (GPT-3, Megatron GPT) are not counted: the description has no
/// flag for them and they are below 0.1% of every preset.
ParameterCount count_parameters(const TransformerConfig& config);

/// Forward pass per token; a multiply-add is 2 FLOPs.
struct FlopsPerToken {
  /// Every weight GEMM a token passes through: attention projections, the MLP or the active
  /// experts (shared included), the router and the logits, those of the multi-token-prediction
  /// modules included (their layers, eh_proj and a further pass through the output head).
  double dense_matmul = 0;
  /// QK^T and AV over a full (non-causal) sequence of seq_len: 2*2*seq*head_dim*heads per layer
  /// (multi-token-prediction layers included), with MLA's q/k and v head widths under MLA.
  double attention_scores = 0;
  double logits = 0;  ///< the LM head, once per prediction depth; already part of dense_matmul
  /// Causal attention skips half the score matrix.
  double total(bool causal) const { return dense_matmul + attention_scores * (causal ? 0.5 : 1.0); }
};

/// Biases, norms, softmax and the embedding lookup are not matmuls and count 0.
FlopsPerToken flops_per_token(const TransformerConfig& config);
/// Model FLOPs per training token = 3 x forward (fwd + 2x bwd), the convention of Megatron/NeMo
/// MFU (no recompute).
double training_flops_per_token(const TransformerConfig& config, bool causal);
/// Megatron-LM's closed form (Narayanan et al. SC'21 eq. 3 without the recompute factor):
/// 72*B*s*l*h^2*(1 + s/(6h) + V/(12lh)) per batch of B sequences, divided by B*s. Only meaningful
/// for GPT-style MHA/GELU models with ffn = 4h; exposed so tests can check that the general count
/// reduces to it.
double megatron_flops_per_token(const TransformerConfig& config);

}  // namespace fabricsim::models
