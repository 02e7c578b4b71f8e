#include "models/megatron_bridge_flops.hpp"

#include <cmath>

namespace fabricsim::models {

namespace {

/// Layers (of `layers`, the decoder's and the multi-token-prediction modules') that v0.5.0 counts
/// as sliding-window in a windowed model: all of them, but every full_attention_every-th (i + 1
/// divisible by it).
double windowed_layer_count(const TransformerConfig& m, double layers) {
  if (m.full_attention_every <= 0) return layers;
  return layers - std::floor(layers / m.full_attention_every);
}

}  // namespace

double megatron_bridge_flops_per_token(const TransformerConfig& m, int seq_len, int tp,
                                       BridgeFlopForm form) {
  // Multi-token-prediction modules count as layers of the last layer's kind (last_layer_is_moe).
  const double mtp = m.mtp_layers;
  const double h = m.hidden, L = m.layers + mtp, s = seq_len, heads = m.heads;
  const bool last_moe = m.moe && is_moe_layer(m, m.layers - 1);
  const double moe_layers = (m.moe ? moe_layer_count(m) : 0.0) + (last_moe ? mtp : 0.0);
  const double dense_layers = L - moe_layers;
  const bool v05 = form == BridgeFlopForm::v0_5;
  const double glu = (v05 ? is_gated(m.mlp) : m.mlp == MlpKind::swiglu) ? 1.5 : 1.0;
  // The expansion factor 12 = 3 (fwd, dgrad, wgrad) x 2 (two GEMMs per block) x 2 (FLOPs per MAC).
  double mlp = m.ffn * glu * dense_layers;
  if (m.moe) {
    const MoeConfig& e = *m.moe;
    const double shared = static_cast<double>(e.shared_experts) * e.shared_expert_ffn;
    mlp += (static_cast<double>(e.expert_ffn) * e.top_k + shared) * glu * moe_layers;
  }
  double attention = 0;
  if (m.mla) {
    const MlaConfig& a = *m.mla;
    const double qk = a.qk_nope_head_dim, rope = a.qk_rope_head_dim, v = a.v_head_dim;
    const double q_term =
        a.q_lora_rank > 0 ? a.q_lora_rank * (h + heads * (qk + rope) + 1) : h * heads * (qk + rope);
    attention = 6.0 * L *
                (q_term + a.kv_lora_rank * (h + heads * (qk + v) + 1) + h * rope + heads * v * h +
                 s * heads * (qk + rope) / 2 + s * heads * v / 2);
  } else {
    const double head_dim = m.head_dim > 0 ? m.head_dim : h / heads;
    attention = 12.0 * L * h * h * (1 + m.kv_heads / heads + s / h / 2) * (head_dim * heads / h);
    const double window = m.sliding_window + 1.0;
    if (v05 && m.sliding_window > 0 && window < s) {
      // The windowed layers' scores over their mean causal context instead of half the sequence.
      const double context = window - window * (window - 1) / (2 * s);
      attention -= 12.0 * windowed_layer_count(m, L) * head_dim * heads * (s / 2 - context);
    }
  }
  const double multiple = 128.0 * tp;
  const double vocab = std::ceil(m.vocab / multiple) * multiple;
  // Each module's eh_proj (2h -> h) and its three norms (counted 3h), and a logit per depth.
  const double mtp_projection = 6.0 * mtp * (3.0 * h + 2.0 * h * h);
  return 12.0 * h * mlp + attention + mtp_projection + 6.0 * h * vocab * (1 + mtp);
}

double megatron_bridge_lora_flops_per_token(const TransformerConfig& m, int document_tokens) {
  const double h = m.hidden, L = m.layers;
  const double frozen =
      L * h * h * (12 + 12.0 * m.kv_heads / m.heads + 18.0 * m.ffn / h + 6.0 * m.vocab / (L * h));
  return frozen * 2.0 / 3.0 + 12.0 * L * h * document_tokens;
}

}  // namespace fabricsim::models
