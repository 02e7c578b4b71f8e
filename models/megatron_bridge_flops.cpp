#include "models/megatron_bridge_flops.hpp"

#include <cmath>

namespace fabricsim::models {

double megatron_bridge_flops_per_token(const TransformerConfig& m, int seq_len, int tp) {
  const double h = m.hidden, L = m.layers, s = seq_len, heads = m.heads;
  const double moe_layers = m.moe ? moe_layer_count(m) : 0.0;
  const double dense_layers = L - moe_layers;
  const double glu = m.mlp == MlpKind::swiglu ? 1.5 : 1.0;
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
  }
  const double multiple = 128.0 * tp;
  const double vocab = std::ceil(m.vocab / multiple) * multiple;
  return 12.0 * h * mlp + attention + 6.0 * h * vocab;
}

double megatron_bridge_lora_flops_per_token(const TransformerConfig& m, int document_tokens) {
  const double h = m.hidden, L = m.layers;
  const double frozen =
      L * h * h * (12 + 12.0 * m.kv_heads / m.heads + 18.0 * m.ffn / h + 6.0 * m.vocab / (L * h));
  return frozen * 2.0 / 3.0 + 12.0 * L * h * document_tokens;
}

}  // namespace fabricsim::models
