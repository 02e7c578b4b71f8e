#include "models/transformer.hpp"

#include <stdexcept>
#include <string>

namespace fabricsim::models {

double moe_rank_load(const MoeConfig& moe) {
  return moe.capacity_factor > 0 ? moe.capacity_factor : moe.load_imbalance;
}
namespace {

int mlp_matrices(MlpKind kind) {
  return is_gated(kind) ? 3 : 2;
}

/// Weights of one MLP of width `ffn`; biases sit on every matrix's output.
double mlp_weights(const TransformerConfig& c, int ffn) {
  return static_cast<double>(mlp_matrices(c.mlp)) * c.hidden * ffn;
}

double mlp_biases(const TransformerConfig& c, int ffn) {
  if (!c.bias) return 0;
  return static_cast<double>(mlp_matrices(c.mlp) - 1) * ffn + c.hidden;
}

double mlp_params(const TransformerConfig& c, int ffn) {
  return mlp_weights(c, ffn) + mlp_biases(c, ffn);
}

/// Weights of one layer's attention projections (no biases, no norms).
double attention_weights(const TransformerConfig& c) {
  const double h = c.hidden;
  if (c.mla) {
    const MlaConfig& m = *c.mla;
    const double qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim;
    const MlaUpProjections up = mla_up_projections(m, c.heads);
    const double q = m.q_lora_rank > 0 ? h * m.q_lora_rank + up.q : h * c.heads * qk_head;
    // The compressed kv latent and the shared RoPE key come from one projection.
    const double kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + up.kv;
    const double out = static_cast<double>(c.heads) * m.v_head_dim * h;
    return q + kv + out;
  }
  const double q_width = static_cast<double>(c.heads) * c.head_dim;
  const double kv_width = static_cast<double>(c.kv_heads) * c.head_dim;
  return h * q_width + 2 * h * kv_width + q_width * h;
}

double attention_biases(const TransformerConfig& c) {
  if (!c.bias) return 0;
  if (c.mla) {
    const MlaConfig& m = *c.mla;
    return static_cast<double>(c.heads) * (m.qk_nope_head_dim + m.qk_rope_head_dim) +
           m.kv_lora_rank + m.qk_rope_head_dim + m.q_lora_rank +
           static_cast<double>(c.heads) * (m.qk_nope_head_dim + m.v_head_dim) + c.hidden;
  }
  return static_cast<double>(c.heads + 2 * c.kv_heads) * c.head_dim + c.hidden;
}

/// One norm over `width`: a scale, plus a shift when the model has biases (LayerNorm).
double norm_params(const TransformerConfig& c, double width) {
  return width * (c.bias ? 2 : 1);
}

/// Norms of one layer: before attention and before the MLP, plus MLA's norms on its latents.
double layer_norm_params(const TransformerConfig& c) {
  double n = 2 * norm_params(c, c.hidden);
  if (c.qk_norm && !c.mla) n += 2 * norm_params(c, c.head_dim);  // one per q and k head width
  if (c.mla) {
    n += norm_params(c, c.mla->kv_lora_rank);
    if (c.mla->q_lora_rank > 0) n += norm_params(c, c.mla->q_lora_rank);
  }
  return n;
}

}  // namespace

const char* mlp_kind_name(MlpKind kind) {
  switch (kind) {
    case MlpKind::gelu:
      return "gelu";
    case MlpKind::swiglu:
      return "swiglu";
    case MlpKind::squared_relu:
      return "squared_relu";
    case MlpKind::quick_geglu:
      return "quick_geglu";
  }
  return "gelu";
}

const char* position_encoding_name(PositionEncoding encoding) {
  switch (encoding) {
    case PositionEncoding::rope:
      return "rope";
    case PositionEncoding::yarn:
      return "yarn";
    case PositionEncoding::learned:
      return "learned";
    case PositionEncoding::alibi:
      return "alibi";
  }
  return "rope";
}

namespace {
constexpr PositionEncoding kPositionEncodings[] = {PositionEncoding::rope, PositionEncoding::yarn,
                                                   PositionEncoding::learned,
                                                   PositionEncoding::alibi};
}  // namespace

std::optional<PositionEncoding> position_encoding_from(std::string_view name) {
  for (const PositionEncoding e : kPositionEncodings) {
    if (name == position_encoding_name(e)) return e;
  }
  return std::nullopt;
}

std::vector<std::string> position_encoding_names() {
  std::vector<std::string> out;
  for (const PositionEncoding e : kPositionEncodings)
    out.emplace_back(position_encoding_name(e));
  return out;
}

bool is_gated(MlpKind kind) {
  return kind == MlpKind::swiglu || kind == MlpKind::quick_geglu;
}

bool is_moe_layer(const TransformerConfig& config, int layer) {
  if (layer < 0 || layer >= config.layers) {
    throw std::out_of_range("layer " + std::to_string(layer) + " outside a model of " +
                            std::to_string(config.layers) + " layers");
  }
  if (!config.moe) return false;
  const MoeConfig& m = *config.moe;
  if (layer < m.dense_layers) return false;
  return m.moe_layer_freq <= 1 || layer % m.moe_layer_freq == 0;
}

bool is_windowed_layer(const TransformerConfig& config, int layer) {
  if (layer < 0 || layer >= config.layers) {
    throw std::out_of_range("layer " + std::to_string(layer) + " outside a model of " +
                            std::to_string(config.layers) + " layers");
  }
  if (config.sliding_window <= 0) return false;
  const int every = config.full_attention_every;
  return every <= 0 || (layer + 1) % every != 0;
}

double windowed_span(double span, double window) {
  if (window <= 0 || window >= span) return span;
  return 2.0 * window - window * window / span;
}

int moe_layer_count(const TransformerConfig& config) {
  int n = 0;
  for (int layer = 0; layer < config.layers; ++layer) {
    if (is_moe_layer(config, layer)) ++n;
  }
  return n;
}

MlaUpProjections mla_up_projections(const MlaConfig& mla, int heads) {
  const double qk_head = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
  return {static_cast<double>(mla.q_lora_rank) * heads * qk_head,
          static_cast<double>(mla.kv_lora_rank) * heads * (mla.qk_nope_head_dim + mla.v_head_dim)};
}

namespace {

/// Weights of one layer's MLP, as the token passes through it: the active experts, the shared
/// ones and the router on an MoE layer.
double active_mlp_weights(const TransformerConfig& c, bool moe_layer) {
  if (!moe_layer) return mlp_weights(c, c.ffn);
  const MoeConfig& m = *c.moe;
  return m.top_k * mlp_weights(c, m.expert_ffn) +
         m.shared_experts * mlp_weights(c, m.shared_expert_ffn) +
         static_cast<double>(c.hidden) * m.experts;
}

/// Whether a multi-token-prediction layer has routed experts: it takes the last layer's kind
/// (Megatron-Core builds it from the decoder's last layer spec; Megatron-Bridge's FLOP count
/// says last_layer_is_moe).
bool mtp_is_moe(const TransformerConfig& c) {
  return c.layers > 0 && is_moe_layer(c, c.layers - 1);
}

}  // namespace

ParameterCount count_parameters(const TransformerConfig& config) {
  const TransformerConfig& c = config;
  ParameterCount p;
  const double table = static_cast<double>(c.vocab) * c.hidden;
  p.embedding = c.tied_embeddings ? table : 2 * table;
  const int moe_layers = moe_layer_count(c);
  const int dense_layers = c.layers - moe_layers;
  p.attention = c.layers * (attention_weights(c) + attention_biases(c));
  p.norms = c.layers * layer_norm_params(c) + norm_params(c, c.hidden);
  p.mlp_dense = dense_layers * mlp_params(c, c.ffn);
  double active_experts = 0;
  if (c.moe) {
    const MoeConfig& m = *c.moe;
    const double expert = mlp_params(c, m.expert_ffn);
    p.mlp_dense +=
        static_cast<double>(moe_layers) * m.shared_experts * mlp_params(c, m.shared_expert_ffn);
    p.mlp_experts = static_cast<double>(moe_layers) * m.experts * expert;
    p.router = static_cast<double>(moe_layers) * c.hidden * m.experts;
    active_experts = static_cast<double>(moe_layers) * m.top_k * expert;
  }
  p.total = p.embedding + p.attention + p.mlp_dense + p.mlp_experts + p.router + p.norms;
  p.active = p.total - p.mlp_experts + active_experts;
  if (c.mtp_layers > 0) {
    // Per module: enorm, hnorm, eh_proj (2h -> h), one layer, its final norm.
    const bool moe = mtp_is_moe(c);
    double mlp = mlp_params(c, c.ffn);
    if (moe) {
      const MoeConfig& m = *c.moe;
      mlp = m.experts * mlp_params(c, m.expert_ffn) +
            m.shared_experts * mlp_params(c, m.shared_expert_ffn) +
            static_cast<double>(c.hidden) * m.experts;
    }
    const double h = c.hidden;
    p.mtp = c.mtp_layers * (3 * norm_params(c, h) + 2 * h * h + attention_weights(c) +
                            attention_biases(c) + layer_norm_params(c) + mlp);
  }
  return p;
}

FlopsPerToken flops_per_token(const TransformerConfig& config) {
  const TransformerConfig& c = config;
  FlopsPerToken f;
  const int moe_layers = moe_layer_count(c);
  const int dense_layers = c.layers - moe_layers;
  const int layers = c.layers + c.mtp_layers;
  double weights = layers * attention_weights(c) + dense_layers * active_mlp_weights(c, false) +
                   moe_layers * (c.moe ? active_mlp_weights(c, true) : 0.0);
  if (c.mtp_layers > 0) {
    const double h = c.hidden;
    weights += c.mtp_layers * (2 * h * h + active_mlp_weights(c, mtp_is_moe(c)));
  }
  f.logits = 2.0 * c.hidden * c.vocab * (1 + c.mtp_layers);
  f.dense_matmul = 2 * weights + f.logits;
  const double qk_width = c.mla ? c.mla->qk_nope_head_dim + c.mla->qk_rope_head_dim : c.head_dim;
  const double v_width = c.mla ? c.mla->v_head_dim : c.head_dim;
  f.attention_scores =
      layers * 2.0 * c.seq_len * static_cast<double>(c.heads) * (qk_width + v_width);
  return f;
}

double training_flops_per_token(const TransformerConfig& config, bool causal) {
  return 3 * flops_per_token(config).total(causal);
}

double megatron_flops_per_token(const TransformerConfig& config) {
  const double l = config.layers;
  const double h = config.hidden;
  const double s = config.seq_len;
  const double v = config.vocab;
  return 72 * l * h * h * (1 + s / (6 * h) + v / (12 * l * h));
}

}  // namespace fabricsim::models
