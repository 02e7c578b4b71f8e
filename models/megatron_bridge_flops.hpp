#pragma once
// The model FLOPs Megatron-Bridge reports (its TFLOP/s per GPU and MFU): the closed form of its
// flop_utils.py, which counts some things differently from the GEMMs a step runs (no router,
// causal attention, the padded vocabulary, a gate counted only for SiLU).

#include <cstdint>

#include "models/transformer.hpp"

namespace fabricsim::models {

/// Training FLOPs (forward and backward) per token of a pre-training step of `seq_len`-token
/// sequences under tensor parallelism `tp`, as Megatron-Bridge counts them:
/// src/megatron/bridge/training/utils/flop_utils.py, transformer_flops(), NVIDIA-NeMo/
/// Megatron-Bridge@7af9601c (v0.2.0, the NeMo 25.11 container; the same formula since the
/// calculator's introduction in d42316e9, 2025-09). Per token:
///   6 h [ffn g (dense layers) + (expert_ffn top_k + shared_ffn) g (MoE layers)]
///   + self-attention: GQA/MHA 12 L h^2 (1 + kv_heads/heads + s/(2h)) (head_dim heads / h);
///     MLA 6 L (q_lora (h + heads (qk + rope) + 1) + kv_lora (h + heads (qk + v) + 1) + h rope
///     + heads v h + s heads (qk + rope) / 2 + s heads v / 2)
///   + 6 h V_padded (the logits),
///   + per multi-token-prediction module: a layer of the last layer's kind (attention and MLP
///     terms over L + mtp layers), 6 (3 h + 2 h^2) for its norms and eh_proj, and 6 h V_padded,
/// g = 3/2 only for a gated SiLU MLP (gated_linear_unit and activation_func == F.silu: GPT-OSS's
/// quick-GELU gate counts 1), V padded to a multiple of 128 tp (make_vocab_size_divisible_by).
/// The router and the decoder's norms count nothing here.
///
/// From v0.5.0 (the NeMo 26.06 container, 2026-06-16) two terms change (Megatron-Bridge#3029,
/// 2026-03-31, and #3947, 2026-05-28, neither in v0.4.2): every gated MLP counts its gate
/// (g = 3/2 whenever gated_linear_unit, GPT-OSS's quick-GELU included), and a sliding-window
/// layer counts its mean causal context instead of s/2: with W = window + 1 keys (window_size
/// (W - 1, 0)) and W < s, 12 L_swa h_q (W - W (W - 1) / (2 s)) for the scores instead of
/// 12 L_swa h_q s / 2, where h_q = head_dim heads; full-attention layers (every
/// full_attention_every-th, window_attn_skip_freq) keep s/2.
enum class BridgeFlopForm : uint8_t {
  v0_2,  ///< v0.2.0 through v0.4.2: NeMo 25.09 to 26.04.01
  v0_5,  ///< v0.5.0 on: NeMo 26.06 and later
};
double megatron_bridge_flops_per_token(const TransformerConfig& model, int seq_len, int tp,
                                       BridgeFlopForm form);

/// Per token of a LoRA fine-tuning step on packed sequences, as Megatron-Bridge counts it from
/// 26.02.01 (flop_utils.py transformer_flops(), NVIDIA-NeMo/Megatron-Bridge#2571, 2026-03-03;
/// v0.3.1 through v0.5.0): two thirds (no weight gradient) of the frozen model's
///   L h^2 (12 + 12 kv_heads/heads + 18 ffn/h + 6 V/(L h))   (V unpadded, no attention scores)
/// plus the attention over each packed document in full, 12 L h D for documents of D tokens
/// (its avg_seqlen2, the mean over sequences of the sum of squared document lengths, divided by
/// the packed length). Megatron-Bridge applies it to its Llama 3 70B SQuAD LoRA recipe, the one
/// its performance summary publishes.
double megatron_bridge_lora_flops_per_token(const TransformerConfig& model, int document_tokens);

}  // namespace fabricsim::models
