#include "models/model_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "models/model_presets.hpp"

namespace fabricsim::models {
namespace {

using sim::JsonValue;
using sim::ObjectReader;

/// One violated rule: `field` is a path below the model object ("heads", "moe/top_k").
struct ModelProblem {
  std::string field;
  std::string message;
};

int positive_int(const JsonValue& v) {
  return v.as_positive_int32();
}
int non_negative_int(const JsonValue& v) {
  return v.as_non_negative_int32();
}

/// Reads `key` into `field` when present; when absent, a required key is an error and an optional
/// one leaves `field` as it is. Returns whether the key was present.
template <class T, class Read>
bool read_into(ObjectReader& r, std::string_view key, bool required, T& field, Read read) {
  if (required) {
    field = read(r.required(key));
    return true;
  }
  if (auto v = r.optional(key)) {
    field = read(*v);
    return true;
  }
  return false;
}

MoeConfig read_moe(const JsonValue& v, const std::optional<MoeConfig>& base) {
  ObjectReader r = v.as_object();
  MoeConfig m = base.value_or(MoeConfig{});
  const bool need = !base.has_value();
  read_into(r, "experts", need, m.experts, positive_int);
  read_into(r, "top_k", need, m.top_k, positive_int);
  read_into(r, "expert_ffn", need, m.expert_ffn, positive_int);
  read_into(r, "shared_experts", false, m.shared_experts, non_negative_int);
  read_into(r, "shared_expert_ffn", false, m.shared_expert_ffn, non_negative_int);
  read_into(r, "dense_layers", false, m.dense_layers, non_negative_int);
  read_into(r, "moe_layer_freq", false, m.moe_layer_freq, positive_int);
  read_into(r, "capacity_factor", false, m.capacity_factor, [](const JsonValue& x) {
    const double f = x.as_number();
    if (f < 0) x.fail("a non-negative capacity factor (0 = dropless)");
    return f;
  });
  read_into(r, "load_imbalance", false, m.load_imbalance, [](const JsonValue& x) {
    const double f = x.as_number();
    if (!(f >= 1) || f > 64) x.fail("a load imbalance from 1 (balanced) to 64");
    return f;
  });
  read_into(r, "router_aux_free", false, m.router_aux_free,
            [](const JsonValue& x) { return x.as_bool(); });
  read_into(r, "expert_bias", false, m.expert_bias, [](const JsonValue& x) { return x.as_bool(); });
  r.finish();
  return m;
}

MlaConfig read_mla(const JsonValue& v, const std::optional<MlaConfig>& base) {
  ObjectReader r = v.as_object();
  MlaConfig m = base.value_or(MlaConfig{});
  const bool need = !base.has_value();
  read_into(r, "q_lora_rank", false, m.q_lora_rank, non_negative_int);
  read_into(r, "kv_lora_rank", need, m.kv_lora_rank, positive_int);
  read_into(r, "qk_nope_head_dim", need, m.qk_nope_head_dim, positive_int);
  read_into(r, "qk_rope_head_dim", need, m.qk_rope_head_dim, positive_int);
  read_into(r, "v_head_dim", need, m.v_head_dim, positive_int);
  r.finish();
  return m;
}

std::optional<ModelProblem> positive(const char* field, int value) {
  if (value > 0) return std::nullopt;
  return ModelProblem{field, fmt::format("expected a positive integer, got {}", value)};
}

std::optional<ModelProblem> find_moe_problem(const MoeConfig& m, int layers) {
  if (auto p = positive("moe/experts", m.experts)) return p;
  if (auto p = positive("moe/top_k", m.top_k)) return p;
  if (m.top_k > m.experts) {
    return ModelProblem{"moe/top_k", fmt::format("expected top_k at most experts ({}), got {}",
                                                 m.experts, m.top_k)};
  }
  if (auto p = positive("moe/expert_ffn", m.expert_ffn)) return p;
  if (m.shared_experts < 0) {
    return ModelProblem{"moe/shared_experts",
                        fmt::format("expected a non-negative integer, got {}", m.shared_experts)};
  }
  if (m.shared_experts > 0) {
    if (auto p = positive("moe/shared_expert_ffn", m.shared_expert_ffn)) return p;
  } else if (m.shared_expert_ffn < 0) {
    return ModelProblem{
        "moe/shared_expert_ffn",
        fmt::format("expected a non-negative integer, got {}", m.shared_expert_ffn)};
  }
  if (m.dense_layers < 0 || m.dense_layers >= layers) {
    return ModelProblem{"moe/dense_layers",
                        fmt::format("expected dense_layers from 0 to layers - 1 ({}), got {}",
                                    layers - 1, m.dense_layers)};
  }
  if (auto p = positive("moe/moe_layer_freq", m.moe_layer_freq)) return p;
  if (!(m.capacity_factor >= 0) || !std::isfinite(m.capacity_factor)) {
    return ModelProblem{
        "moe/capacity_factor",
        fmt::format("expected a non-negative capacity factor (0 = dropless), got {}",
                    m.capacity_factor)};
  }
  return std::nullopt;
}

std::optional<ModelProblem> find_mla_problem(const MlaConfig& m) {
  if (m.q_lora_rank < 0) {
    return ModelProblem{"mla/q_lora_rank",
                        fmt::format("expected a non-negative integer, got {}", m.q_lora_rank)};
  }
  if (auto p = positive("mla/kv_lora_rank", m.kv_lora_rank)) return p;
  if (auto p = positive("mla/qk_nope_head_dim", m.qk_nope_head_dim)) return p;
  if (auto p = positive("mla/qk_rope_head_dim", m.qk_rope_head_dim)) return p;
  return positive("mla/v_head_dim", m.v_head_dim);
}

std::optional<ModelProblem> find_problem(const TransformerConfig& c) {
  if (c.name.empty()) return ModelProblem{"name", "expected a non-empty name, got \"\""};
  const std::pair<const char*, int> sizes[] = {
      {"layers", c.layers}, {"hidden", c.hidden},     {"ffn", c.ffn},
      {"heads", c.heads},   {"kv_heads", c.kv_heads}, {"head_dim", c.head_dim},
      {"vocab", c.vocab},   {"seq_len", c.seq_len},
  };
  for (const auto& [field, value] : sizes) {
    if (auto p = positive(field, value)) return p;
  }
  // Bounds far above any published model, so that sizes stay in range of the int arithmetic of
  // the workload and a typo cannot ask for a million-layer graph (docs/formats.md).
  const std::tuple<const char*, int, int> limits[] = {
      {"layers", c.layers, 10'000},
      {"hidden", c.hidden, 1 << 20},
      {"ffn", c.ffn, 1 << 22},
      {"heads", c.heads, 1 << 16},
      {"kv_heads", c.kv_heads, 1 << 16},
      {"head_dim", c.head_dim, 1 << 16},
      {"vocab", c.vocab, 1 << 24},
      {"seq_len", c.seq_len, 1 << 24},
      {"mtp_layers", c.mtp_layers, 16},
      {"sliding_window", c.sliding_window, 1 << 24},
      {"full_attention_every", c.full_attention_every, 10'000},
  };
  for (const auto& [field, value, limit] : limits) {
    if (value > limit) {
      return ModelProblem{field, fmt::format("expected at most {}, got {}", limit, value)};
    }
  }
  if (c.mtp_layers < 0) {
    return ModelProblem{"mtp_layers",
                        fmt::format("expected an integer >= 0, got {}", c.mtp_layers)};
  }
  if (c.full_attention_every > 0 && c.sliding_window == 0) {
    return ModelProblem{"full_attention_every",
                        fmt::format("expected a sliding_window for full_attention_every {} to "
                                    "interleave with, got none",
                                    c.full_attention_every)};
  }
  if (c.heads % c.kv_heads != 0) {
    return ModelProblem{"kv_heads", fmt::format("expected kv_heads dividing heads ({}), got {}",
                                                c.heads, c.kv_heads)};
  }
  if (c.moe) {
    if (auto p = find_moe_problem(*c.moe, c.layers)) return p;
  }
  if (c.mla) return find_mla_problem(*c.mla);
  return std::nullopt;
}

/// The pointer of `field` below `v`, as far down as the document has it: a rule broken by a
/// preset's value and an override points at the object that holds the override.
std::string locate(const JsonValue& v, const std::string& field) {
  const nlohmann::json* node = &v.raw();
  std::string pointer = v.pointer();
  size_t start = 0;
  while (start <= field.size()) {
    const size_t end = std::min(field.find('/', start), field.size());
    const std::string part = field.substr(start, end - start);
    if (!node->is_object() || !node->contains(part)) break;
    node = &(*node)[part];
    pointer = sim::json_pointer_child(pointer, part);
    start = end + 1;
  }
  return pointer.empty() ? "/" : pointer;
}

}  // namespace

TransformerConfig read_model(const JsonValue& v) {
  ObjectReader r = v.as_object();
  TransformerConfig c;
  bool from_preset = false;
  if (auto p = r.optional("preset")) {
    const TransformerConfig* preset = find_model(p->as_string());
    if (preset == nullptr) p->fail(fmt::format("a model preset (one of: {})", model_names()));
    c = *preset;
    from_preset = true;
  }
  const bool need = !from_preset;
  const bool was_mha = c.kv_heads == c.heads;
  const auto as_string = [](const JsonValue& x) { return x.as_string(); };
  const auto as_bool = [](const JsonValue& x) { return x.as_bool(); };
  read_into(r, "name", need, c.name, as_string);
  read_into(r, "layers", need, c.layers, positive_int);
  bool shape_changed = read_into(r, "hidden", need, c.hidden, positive_int);
  shape_changed |= read_into(r, "heads", need, c.heads, positive_int);
  read_into(r, "ffn", need, c.ffn, positive_int);
  read_into(r, "vocab", need, c.vocab, positive_int);
  read_into(r, "seq_len", need, c.seq_len, positive_int);
  if (!read_into(r, "kv_heads", false, c.kv_heads, positive_int) && was_mha) c.kv_heads = c.heads;
  if (!read_into(r, "head_dim", false, c.head_dim, positive_int) && shape_changed) {
    if (c.hidden % c.heads != 0) {
      throw sim::InputError(v.file(), locate(v, r.has("heads") ? "heads" : "hidden"),
                            fmt::format("expected heads dividing hidden ({}) or an explicit "
                                        "head_dim, got {}",
                                        c.hidden, c.heads));
    }
    c.head_dim = c.hidden / c.heads;
  }
  read_into(r, "tied_embeddings", false, c.tied_embeddings, as_bool);
  read_into(r, "mlp", false, c.mlp, [](const JsonValue& x) {
    const std::string kind = x.as_enum({"gelu", "swiglu", "squared_relu", "quick_geglu"});
    if (kind == "swiglu") return MlpKind::swiglu;
    if (kind == "squared_relu") return MlpKind::squared_relu;
    if (kind == "quick_geglu") return MlpKind::quick_geglu;
    return MlpKind::gelu;
  });
  read_into(r, "bias", false, c.bias, as_bool);
  read_into(r, "mtp_layers", false, c.mtp_layers, non_negative_int);
  read_into(r, "qk_norm", false, c.qk_norm, as_bool);
  read_into(r, "sliding_window", false, c.sliding_window, non_negative_int);
  read_into(r, "full_attention_every", false, c.full_attention_every, non_negative_int);
  read_into(r, "position", false, c.position, [](const JsonValue& x) {
    return *position_encoding_from(x.as_enum(position_encoding_names()));
  });
  if (auto m = r.optional("moe")) c.moe = read_moe(*m, c.moe);
  if (auto m = r.optional("mla")) c.mla = read_mla(*m, c.mla);
  read_into(r, "source", false, c.source, as_string);
  r.finish();
  if (auto problem = find_problem(c)) {
    throw sim::InputError(v.file(), locate(v, problem->field), problem->message);
  }
  return c;
}

nlohmann::json model_to_json(const TransformerConfig& c) {
  nlohmann::json j = {
      {"name", c.name},
      {"layers", c.layers},
      {"hidden", c.hidden},
      {"ffn", c.ffn},
      {"heads", c.heads},
      {"kv_heads", c.kv_heads},
      {"head_dim", c.head_dim},
      {"vocab", c.vocab},
      {"seq_len", c.seq_len},
      {"tied_embeddings", c.tied_embeddings},
      {"mlp", mlp_kind_name(c.mlp)},
      {"bias", c.bias},
      {"mtp_layers", c.mtp_layers},
      {"qk_norm", c.qk_norm},
      {"sliding_window", c.sliding_window},
      {"full_attention_every", c.full_attention_every},
      {"position", position_encoding_name(c.position)},
  };
  if (c.moe) {
    const MoeConfig& m = *c.moe;
    j["moe"] = {
        {"experts", m.experts},
        {"top_k", m.top_k},
        {"expert_ffn", m.expert_ffn},
        {"shared_experts", m.shared_experts},
        {"shared_expert_ffn", m.shared_expert_ffn},
        {"dense_layers", m.dense_layers},
        {"moe_layer_freq", m.moe_layer_freq},
        {"capacity_factor", m.capacity_factor},
        {"load_imbalance", m.load_imbalance},
        {"router_aux_free", m.router_aux_free},
        {"expert_bias", m.expert_bias},
    };
  }
  if (c.mla) {
    const MlaConfig& m = *c.mla;
    j["mla"] = {
        {"q_lora_rank", m.q_lora_rank},
        {"kv_lora_rank", m.kv_lora_rank},
        {"qk_nope_head_dim", m.qk_nope_head_dim},
        {"qk_rope_head_dim", m.qk_rope_head_dim},
        {"v_head_dim", m.v_head_dim},
    };
  }
  if (!c.source.empty()) j["source"] = c.source;
  return j;
}

void validate_model(const TransformerConfig& config, const std::string& where) {
  if (auto problem = find_problem(config)) {
    throw sim::InputError(where, "/" + problem->field, problem->message);
  }
}

}  // namespace fabricsim::models
