#pragma once
// The memory-bound ops of a transformer layer as eager PyTorch runs them: every elementwise op of
// the model's Python code is its own kernel that reads and writes HBM, and the norms and rotary
// embeddings compute in fp32. Fused stacks (Transformer Engine, Apex, torch.compile) run each of
// these as one kernel over bf16 (models/workload.cpp prices those).
//
// Bytes per element of the op's tensor, counted from the code of torchtitan's Llama at 9dec370
// (torchtitan/models/norms.py RMSNorm, models/llama/model.py apply_rotary_emb, repeat_kv,
// FeedForward, Attention), which Hugging Face's Llama family writes the same way (LlamaRMSNorm,
// apply_rotary_pos_emb, repeat_kv, LlamaMLP); backward counts the kernels autograd runs for them.
// bf16 = 2 bytes, fp32 = 4.

namespace fabricsim::models {

struct EagerKernels {
  double bytes_per_element;
  int kernels;
};

struct EagerOp {
  EagerKernels forward;
  EagerKernels backward;
  const EagerKernels& pass(bool backward_pass) const { return backward_pass ? backward : forward; }
};

/// RMSNorm, `(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * weight`:
/// forward upcast (2 + 4), pow (4 + 4), mean (4), scale (4 + 4), downcast (4 + 2), weight (2 + 2);
/// backward weight product and its reduction (4 + 8), downcast (2 + 4), the scale's two
/// gradients (8 + 16), pow's (8), their sum (12) and the upcast's (4 + 2).
inline constexpr EagerOp kEagerRmsNorm{{36.0, 7}, {68.0, 11}};

/// Rotary embedding per q or k element, as complex products in fp32: upcast (2 + 4), product
/// (4 + 4), downcast (4 + 2); the backward runs the same three.
inline constexpr EagerOp kEagerRotary{{20.0, 3}, {20.0, 3}};

/// Megatron-Core's PyTorch rotary (rope_utils.py _apply_rotary_pos_emb_bshd, core_v0.15.0), which
/// Megatron stacks run when the fused kernel cannot apply the embedding (YaRN's scale), in bf16
/// per q or k element: t * cos (2 + 2), _rotate_half's negation of one half (1 + 1) and the
/// concatenation (2 + 2), the product with sin (2 + 2), the sum (4 + 2) and the concatenation with
/// the unrotated rest, a copy even when empty (2 + 2), beside the cos and sin of the frequencies
/// (a cos or sin, the scale and the cast each: 6 small kernels); backward the two products'
/// gradients (2 + 2 each), the negation's (1 + 1), the halves joined back (2 + 2) and the two paths
/// summed (4 + 2).
inline constexpr EagerOp kMcoreRotary{{24.0, 12}, {20.0, 5}};

/// SwiGLU per element of the FFN width, `silu(x1) * x3`: silu (2 + 2) and the product (4 + 2);
/// backward the product's two gradients (6 + 6) and silu's (6).
inline constexpr EagerOp kEagerSwiglu{{10.0, 2}, {18.0, 3}};

/// The attention output back to token-major order, `transpose(1, 2).contiguous()` (2 + 2), and its
/// gradient copied the same way before the attention backward.
inline constexpr EagerOp kEagerLayoutCopy{{4.0, 1}, {4.0, 1}};

/// Grouped-query attention's keys and values repeated to every query head before the attention
/// kernel (repeat_kv: expand + reshape copies): per key or value element read once and written
/// `n_rep` times; backward reads the `n_rep` copies' gradients and sums them.
inline EagerOp eager_repeat_kv(double n_rep) {
  return {{2.0 + 2.0 * n_rep, 1}, {2.0 * n_rep + 2.0, 1}};
}

}  // namespace fabricsim::models
