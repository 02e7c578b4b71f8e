#pragma once
// Models in JSON: a preset with overrides, or a full description.
//
//   {"preset": "llama3-8b", "seq_len": 4096}       a preset (model_names()) with overrides
//   {"name": "my-7b", "layers": 32, "hidden": 4096, "ffn": 11008, "heads": 32, "vocab": 32000,
//    "seq_len": 4096, "mlp": "swiglu"}              a full description
//
// Keys (all integers are positive unless noted):
//   preset           string, optional: start from this preset; every other key then overrides
//   name             string, required without a preset
//   layers, hidden, ffn, heads, vocab, seq_len   required without a preset
//   kv_heads         default heads (MHA); must divide heads. Overriding heads of an MHA preset
//                    keeps it MHA; a GQA preset keeps its kv_heads.
//   head_dim         default hidden/heads (then heads must divide hidden); recomputed when hidden
//                    or heads is overridden and head_dim is not
//   tied_embeddings  bool, default false
//   mlp              "gelu" | "swiglu" | "squared_relu" | "quick_geglu", default "gelu" (swiglu
//                    and quick_geglu are gated)
//   bias             bool, default false: linear and LayerNorm biases (GPT-3, Megatron GPT)
//   mtp_layers       >= 0, default 0: multi-token-prediction depth (DeepSeek-V3: 1)
//   qk_norm          bool, default false: RMSNorm over each query and key head (Qwen3)
//   sliding_window   >= 0, default 0: banded attention over the tokens before each query
//   full_attention_every  >= 0, default 0: with a window, every N-th layer attends fully
//   position         "rope" | "yarn" | "learned" | "alibi", default "rope": how positions are
//                    encoded (models/transformer.hpp, PositionEncoding)
//   moe              object: experts, top_k (<= experts), expert_ffn (required unless the preset
//                    has MoE, whose values are then the defaults); shared_experts (>= 0, default
//                    0), shared_expert_ffn (> 0 when shared_experts > 0), dense_layers (>= 0,
//                    < layers, default 0), moe_layer_freq (default 1), capacity_factor (>= 0,
//                    0 = dropless, default 0), router_aux_free (bool, default false),
//                    expert_bias (bool, default false)
//   mla              object: kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim
//                    (required unless the preset has MLA); q_lora_rank (>= 0, 0 = queries not
//                    compressed, default 0)
//   source           string: where the numbers come from
// Unknown keys, unknown presets, non-positive sizes and inconsistent dimensions throw
// sim::InputError naming the file and JSON pointer.

#include <nlohmann/json.hpp>
#include <string>

#include "models/transformer.hpp"
#include "sim/json_reader.hpp"

namespace fabricsim::models {

TransformerConfig read_model(const sim::JsonValue& v);
/// The full description (never a preset reference); read_model reads it back unchanged.
nlohmann::json model_to_json(const TransformerConfig& config);
/// Checks what the JSON reader checks, for configs built in code: positive sizes, heads divisible
/// by kv_heads, top_k <= experts, etc. Throws sim::InputError(where, "/<field>", ...).
void validate_model(const TransformerConfig& config, const std::string& where);

}  // namespace fabricsim::models
