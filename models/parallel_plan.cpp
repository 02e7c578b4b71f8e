#include "models/parallel_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "models/enum_from_name.hpp"
#include "sim/input_error.hpp"
#include "sim/unit_parse.hpp"

namespace fabricsim::models {

namespace {

constexpr std::array<std::pair<std::string_view, RecomputeModule>, 4> kRecomputeModules = {{
    {"layernorm", RecomputeModule::layernorm},
    {"moe_act", RecomputeModule::moe_act},
    {"mla_up_proj", RecomputeModule::mla_up_proj},
    {"mlp", RecomputeModule::mlp},
}};

}  // namespace

std::optional<uint8_t> parse_recompute_modules(std::string_view text, std::string* error) {
  uint8_t out = 0;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view name = sim::trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (name == "core_attn") continue;
    const auto* it = std::find_if(kRecomputeModules.begin(), kRecomputeModules.end(),
                                  [&](const auto& m) { return m.first == name; });
    if (it == kRecomputeModules.end()) {
      if (error != nullptr) {
        *error = fmt::format(
            "unknown recompute module \"{}\" (expected layernorm, moe_act, mla_up_proj, mlp or "
            "core_attn, comma-separated)",
            name);
      }
      return std::nullopt;
    }
    out |= static_cast<uint8_t>(it->second);
  }
  return out;
}

std::string recompute_modules_text(uint8_t modules) {
  std::string out;
  for (const auto& [name, bit] : kRecomputeModules) {
    if ((modules & static_cast<uint8_t>(bit)) == 0) continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

std::string_view to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

int rank_kv_heads(const TransformerConfig& model, int tp) {
  return model.mla ? model.heads / tp : std::max(1, model.kv_heads / tp);
}

std::string_view to_string(CpComm c) {
  switch (c) {
    case CpComm::a2a:
      return "a2a";
    case CpComm::all_gather:
      return "all_gather";
    case CpComm::p2p:
      break;
  }
  return "p2p";
}

std::optional<CpComm> cp_comm_from(std::string_view name) {
  return enum_from_name(name, {CpComm::p2p, CpComm::a2a, CpComm::all_gather});
}

std::string_view to_string(TrainingTask t) {
  switch (t) {
    case TrainingTask::pretrain:
      return "pretrain";
    case TrainingTask::sft:
      return "sft";
    case TrainingTask::lora:
      return "lora";
  }
  return "?";
}

std::string_view to_string(ParallelDim d) {
  switch (d) {
    case ParallelDim::tp:
      return "tp";
    case ParallelDim::cp:
      return "cp";
    case ParallelDim::dp:
      return "dp";
    case ParallelDim::pp:
      return "pp";
  }
  return "?";
}

std::string_view to_string(GroupKind g) {
  switch (g) {
    case GroupKind::tp:
      return "tp";
    case GroupKind::cp:
      return "cp";
    case GroupKind::dp:
      return "dp";
    case GroupKind::pp:
      return "pp";
    case GroupKind::ep:
      return "ep";
    case GroupKind::edp:
      return "edp";
  }
  return "?";
}

std::optional<std::array<ParallelDim, 4>> parse_order(const std::string& text) {
  std::array<ParallelDim, 4> out{};
  size_t n = 0;
  std::stringstream ss(text);
  std::string item;
  bool seen[4] = {false, false, false, false};
  while (std::getline(ss, item, '-')) {
    if (item == "ep") continue;
    ParallelDim d;
    if (item == "tp") {
      d = ParallelDim::tp;
    } else if (item == "cp") {
      d = ParallelDim::cp;
    } else if (item == "dp") {
      d = ParallelDim::dp;
    } else if (item == "pp") {
      d = ParallelDim::pp;
    } else {
      return std::nullopt;
    }
    if (n >= 4 || seen[static_cast<int>(d)]) return std::nullopt;
    seen[static_cast<int>(d)] = true;
    out[n++] = d;
  }
  if (n != 4) return std::nullopt;
  return out;
}

int micro_batches(const ParallelPlan& plan, const TrainingConfig& training) {
  return static_cast<int>(training.global_batch / (int64_t{plan.dp} * plan.micro_batch));
}

int sequence_length(const TrainingConfig& training, const TransformerConfig& model) {
  return training.seq_len > 0 ? training.seq_len : model.seq_len;
}

std::optional<PlanProblem> check_plan(const ParallelPlan& plan, const TrainingConfig& training,
                                      const TransformerConfig& model, int gpus) {
  using Kind = PlanProblem::Kind;
  auto fail = [](Kind kind, const std::string& field, const std::string& message) {
    return PlanProblem{kind, field, message, false};
  };
  auto fail_training = [](Kind kind, const std::string& message) {
    return PlanProblem{kind, "/training/global_batch", message, true};
  };
  for (auto [name, value] : {std::pair{"tp", plan.tp},
                             {"pp", plan.pp},
                             {"dp", plan.dp},
                             {"cp", plan.cp},
                             {"ep", plan.ep},
                             {"vp", plan.vp},
                             {"micro_batch", plan.micro_batch}}) {
    if (value < 1)
      return fail(Kind::size, std::string("/") + name,
                  fmt::format("expected a positive size, got {}", value));
  }
  // The product in 64 bits, stopping once past the GPU count: no size below can overflow an int.
  int64_t product = 1;
  for (int v : {plan.tp, plan.cp, plan.dp, plan.pp}) {
    if (product > gpus) break;
    product *= v;
  }
  if (product != gpus) {
    return fail(Kind::gpus, "",
                fmt::format("tp x cp x dp x pp = {} x {} x {} x {} = {} does not match the {} GPUs",
                            plan.tp, plan.cp, plan.dp, plan.pp, plan.gpus(), gpus));
  }
  if (plan.zero < 0 || plan.zero > 3)
    return fail(Kind::zero, "/zero", fmt::format("expected 0..3, got {}", plan.zero));
  if (model.heads % plan.tp != 0) {
    return fail(Kind::heads, "/tp",
                fmt::format("{} attention heads do not divide by tp = {}", model.heads, plan.tp));
  }
  if (!model.mla && plan.tp > model.kv_heads && plan.tp % model.kv_heads != 0) {
    return fail(Kind::kv_heads, "/tp",
                fmt::format("{} key/value heads cannot be split or replicated over tp = {}",
                            model.kv_heads, plan.tp));
  }
  if (!model.mla && plan.tp <= model.kv_heads && model.kv_heads % plan.tp != 0) {
    return fail(
        Kind::kv_heads, "/tp",
        fmt::format("{} key/value heads do not divide by tp = {}", model.kv_heads, plan.tp));
  }
  // All-to-all CP hands each rank heads / cp of the TP shard's query and key/value heads
  // (Transformer Engine asserts both divide).
  if (plan.cp > 1 && plan.cp_comm == CpComm::a2a) {
    const int q = model.heads / plan.tp;
    const int kv = rank_kv_heads(model, plan.tp);
    if (q % plan.cp != 0 || kv % plan.cp != 0) {
      return fail(Kind::heads, "/cp_comm_type",
                  fmt::format("a2a needs the {} query and {} key/value heads of a TP rank to "
                              "divide by cp = {} (use p2p)",
                              q, kv, plan.cp));
    }
  }
  const int64_t virtual_stages = int64_t{plan.pp} * plan.vp;
  if (!plan.pipeline_layout.empty()) {
    std::string error;
    const std::optional<PipelineLayout> layout =
        parse_pipeline_layout(plan.pipeline_layout, &error);
    if (!layout) return fail(Kind::layers, "/pipeline_layout", error);
    if (static_cast<int64_t>(layout->stages.size()) != virtual_stages) {
      return fail(Kind::layers, "/pipeline_layout",
                  fmt::format("expected pp x vp = {} x {} = {} stages, got {}", plan.pp, plan.vp,
                              virtual_stages, layout->stages.size()));
    }
    int decoders = 0, mtp = 0;
    for (const PipelineLayout::Stage& stage : layout->stages) {
      decoders += stage.decoders;
      mtp += stage.mtp;
    }
    if (decoders != model.layers || mtp != model.mtp_layers) {
      return fail(Kind::layers, "/pipeline_layout",
                  fmt::format("expected the model's {} decoder layers (t) and {} MTP modules (m), "
                              "got {} and {}",
                              model.layers, model.mtp_layers, decoders, mtp));
    }
  } else if (model.layers % virtual_stages != 0 && !plan.balanced_pipeline) {
    return fail(Kind::layers, "/pp",
                fmt::format("{} layers do not divide into pp x vp = {} x {} stages (set "
                            "\"balanced_pipeline\": true to let the first and last stages take "
                            "fewer layers)",
                            model.layers, plan.pp, plan.vp));
  }
  // Balanced, the first and last virtual stages may hold only the embedding and the loss
  // (Megatron's account_for_embedding/loss_in_pipeline_split count each as a layer).
  const int ends = plan.balanced_pipeline ? 2 : 0;
  if (plan.pipeline_layout.empty() && model.layers + ends < virtual_stages) {
    return fail(
        Kind::layers, "/pp",
        fmt::format("{} layers cannot fill pp x vp = {} stages{}", model.layers, virtual_stages,
                    ends > 0 ? " (with the embedding and the loss as a stage each)" : ""));
  }
  if (model.moe) {
    if (model.moe->experts % plan.ep != 0) {
      return fail(Kind::experts, "/ep",
                  fmt::format("{} experts do not divide by ep = {}", model.moe->experts, plan.ep));
    }
    if ((plan.tp * plan.cp * plan.dp) % plan.ep != 0) {
      return fail(Kind::experts, "/ep",
                  fmt::format("ep = {} does not divide the tp x cp x dp = {} ranks of a stage",
                              plan.ep, plan.tp * plan.cp * plan.dp));
    }
  } else if (plan.ep > 1) {
    return fail(Kind::experts, "/ep", "expert parallelism needs an MoE model");
  }
  if (training.global_batch < 1) {
    return fail_training(Kind::batch, "expected a positive global batch");
  }
  if (training.global_batch % (int64_t{plan.dp} * plan.micro_batch) != 0) {
    return fail_training(
        Kind::batch,
        fmt::format("the global batch of {} sequences does not divide into dp x micro_batch = {} "
                    "x {}",
                    training.global_batch, plan.dp, plan.micro_batch));
  }
  const int m = micro_batches(plan, training);
  if (m > kMaxMicroBatches) {
    return fail_training(
        Kind::batch,
        fmt::format("{} micro-batches per step ({} sequences / (dp x micro_batch = {} x {})): at "
                    "most {} are simulated",
                    m, training.global_batch, plan.dp, plan.micro_batch, kMaxMicroBatches));
  }
  if (plan.vp > 1 && m % plan.pp != 0) {
    return fail(
        Kind::interleave, "/vp",
        fmt::format("the interleaved schedule needs micro-batches ({}) divisible by pp ({})", m,
                    plan.pp));
  }
  const int seq = sequence_length(training, model);
  if (training.unfused_attention && plan.cp > 1) {
    return fail(Kind::sequence, "/cp",
                "context parallelism (ring attention) needs flash attention, not unfused");
  }
  const int cp_chunks = training.causal && plan.cp > 1 ? 2 * plan.cp : plan.cp;
  if (seq % cp_chunks != 0) {
    return fail(Kind::sequence, "/cp",
                fmt::format("the sequence of {} tokens does not divide into {} context-parallel "
                            "chunks",
                            seq, cp_chunks));
  }
  if (plan.sequence_parallel && plan.tp > 1 && (seq / plan.cp) % plan.tp != 0) {
    return fail(Kind::sequence_parallel, "/sequence_parallel",
                fmt::format("{} tokens per context-parallel rank do not divide by tp = {}",
                            seq / plan.cp, plan.tp));
  }
  return std::nullopt;
}

void validate_plan(const ParallelPlan& plan, const TrainingConfig& training,
                   const TransformerConfig& model, int gpus, const std::string& where,
                   const std::string& path) {
  if (const auto problem = check_plan(plan, training, model, gpus)) {
    throw sim::InputError(where, problem->in_training ? problem->field : path + problem->field,
                          problem->message);
  }
}

Placement::Placement(const ParallelPlan& plan, int gpus) : plan_(plan), gpus_(gpus) {
  int stride = 1;
  for (ParallelDim d : plan.order) {
    stride_[static_cast<size_t>(d)] = stride;
    switch (d) {
      case ParallelDim::tp:
        stride *= plan.tp;
        break;
      case ParallelDim::cp:
        stride *= plan.cp;
        break;
      case ParallelDim::dp:
        stride *= plan.dp;
        break;
      case ParallelDim::pp:
        stride *= plan.pp;
        break;
    }
  }
}

Coordinates Placement::coordinates(int rank) const {
  Coordinates c;
  auto coord = [&](ParallelDim d, int size) {
    return (rank / stride_[static_cast<size_t>(d)]) % size;
  };
  c.tp = coord(ParallelDim::tp, plan_.tp);
  c.cp = coord(ParallelDim::cp, plan_.cp);
  c.dp = coord(ParallelDim::dp, plan_.dp);
  c.pp = coord(ParallelDim::pp, plan_.pp);
  c.flat = c.tp + plan_.tp * (c.cp + plan_.cp * c.dp);
  return c;
}

int Placement::rank_of(const Coordinates& c) const {
  return c.tp * stride_[static_cast<size_t>(ParallelDim::tp)] +
         c.cp * stride_[static_cast<size_t>(ParallelDim::cp)] +
         c.dp * stride_[static_cast<size_t>(ParallelDim::dp)] +
         c.pp * stride_[static_cast<size_t>(ParallelDim::pp)];
}

Coordinates Placement::at_flat(int flat, int stage) const {
  Coordinates c;
  c.tp = flat % plan_.tp;
  c.cp = (flat / plan_.tp) % plan_.cp;
  c.dp = flat / (plan_.tp * plan_.cp);
  c.pp = stage;
  c.flat = flat;
  return c;
}

std::vector<uint32_t> Placement::group(GroupKind kind, int rank) const {
  const Coordinates base = coordinates(rank);
  std::vector<uint32_t> out;
  auto with_flat = [&](int flat) { return static_cast<uint32_t>(rank_of(at_flat(flat, base.pp))); };
  switch (kind) {
    case GroupKind::tp:
      for (int i = 0; i < plan_.tp; ++i) {
        Coordinates c = base;
        c.tp = i;
        out.push_back(static_cast<uint32_t>(rank_of(c)));
      }
      break;
    case GroupKind::cp:
      for (int i = 0; i < plan_.cp; ++i) {
        Coordinates c = base;
        c.cp = i;
        out.push_back(static_cast<uint32_t>(rank_of(c)));
      }
      break;
    case GroupKind::dp:
      // Every data- and context-parallel rank of the same tensor-parallel position
      // (ParallelPlan::dense_dp).
      for (int f = base.tp; f < plan_.stage_ranks(); f += plan_.tp)
        out.push_back(with_flat(f));
      break;
    case GroupKind::pp:
      for (int i = 0; i < plan_.pp; ++i) {
        Coordinates c = base;
        c.pp = i;
        out.push_back(static_cast<uint32_t>(rank_of(c)));
      }
      break;
    case GroupKind::ep: {
      const int first = base.flat / plan_.ep * plan_.ep;
      for (int i = 0; i < plan_.ep; ++i)
        out.push_back(with_flat(first + i));
      break;
    }
    case GroupKind::edp: {
      // Same position inside their EP groups: these ranks hold the same experts.
      for (int f = base.flat % plan_.ep; f < plan_.stage_ranks(); f += plan_.ep)
        out.push_back(with_flat(f));
      break;
    }
  }
  return out;
}

int Placement::stage_representative(int stage) const {
  Coordinates c;
  c.pp = stage;
  return rank_of(c);
}

std::vector<std::vector<uint32_t>> Placement::stage_groups(GroupKind kind, int stage) const {
  std::vector<std::vector<uint32_t>> out;
  std::vector<bool> covered(static_cast<size_t>(gpus_), false);
  for (int flat = 0; flat < plan_.stage_ranks(); ++flat) {
    const int r = rank_of(at_flat(flat, stage));
    if (covered[static_cast<size_t>(r)]) continue;
    std::vector<uint32_t> g = group(kind, r);
    for (uint32_t m : g)
      covered[m] = true;
    out.push_back(std::move(g));
  }
  return out;
}

std::string Placement::order_string() const {
  std::string out;
  for (ParallelDim d : plan_.order) {
    if (!out.empty()) out += '-';
    out += to_string(d);
  }
  return out;
}

namespace {

/// The plan's own layout, which check_plan has accepted; nullopt without one.
std::optional<PipelineLayout> own_layout(const ParallelPlan& plan) {
  if (plan.pipeline_layout.empty()) return std::nullopt;
  std::string error;
  std::optional<PipelineLayout> layout = parse_pipeline_layout(plan.pipeline_layout, &error);
  if (!layout) throw std::invalid_argument("pipeline layout: " + error);
  return layout;
}

}  // namespace

std::vector<int> layers_per_virtual_stage(const ParallelPlan& plan, int layers) {
  if (const std::optional<PipelineLayout> layout = own_layout(plan)) {
    std::vector<int> out;
    for (const PipelineLayout::Stage& stage : layout->stages)
      out.push_back(stage.decoders);
    return out;
  }
  const int v = plan.pp * plan.vp;
  std::vector<int> out(static_cast<size_t>(v), layers / v);
  int extra = layers - (layers / v) * v;
  if (extra == 0) return out;
  // Balanced: every stage takes ceil(layers / v), and the first and last virtual stages (which
  // also hold the embedding and the LM head) give up the surplus, alternately.
  const int per = layers / v + 1;
  std::fill(out.begin(), out.end(), per);
  int surplus = per * v - layers;
  // With fewer layers than stages the ends keep only the embedding and the loss.
  const int floor = per == 1 ? 0 : 1;
  for (int i = 0; surplus > 0; ++i) {
    int& target = i % 2 == 0 ? out.back() : out.front();
    if (target > floor) {
      --target;
      --surplus;
    } else if (out.front() <= floor && out.back() <= floor) {
      break;
    }
  }
  // Whatever is left (tiny models) comes off the middle stages.
  for (size_t i = 1; surplus > 0 && i + 1 < out.size(); ++i) {
    if (out[i] > 1) {
      --out[i];
      --surplus;
    }
  }
  return out;
}

PipelineLayout stage_layout(const ParallelPlan& plan, const TransformerConfig& model) {
  if (std::optional<PipelineLayout> own = own_layout(plan)) return *std::move(own);
  PipelineLayout layout;
  for (const int decoders : layers_per_virtual_stage(plan, model.layers)) {
    layout.stages.push_back({.decoders = decoders});
  }
  layout.stages.front().embedding = true;
  layout.stages.back().mtp = model.mtp_layers;
  layout.stages.back().loss = true;
  return layout;
}

}  // namespace fabricsim::models
