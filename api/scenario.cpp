#include "api/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/scenario_settings.hpp"
#include "models/model_json.hpp"
#include "models/model_presets.hpp"
#include "models/straggler_model.hpp"
#include "sim/input_error.hpp"
#include "topologies/spec_error.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {

nlohmann::json default_scenario_json() {
  return nlohmann::json::parse(R"({
    "system": {"preset": "dgx-h100", "gpus": 8},
    "model": {"preset": "llama3-8b"},
    "parallelism": {"tp": 1, "pp": 1, "cp": 2, "micro_batch": 1, "zero": 1,
                    "recompute": "selective"},
    "training": {"task": "pretrain", "precision": "bf16", "seq_len": 8192, "global_batch": 64},
    "simulation": {"backend": "flow"},
    "scale": {"systems": ["generic-h100-pcie-eth", "dgx-h100", "gb200-nvl72"],
              "modes": ["weak", "strong"], "strong_global_batch": 1024}
  })");
}

Assignment parse_assignment(const std::string& a, const std::string& where) {
  const auto eq = a.find('=');
  if (eq == std::string::npos || a.empty() || a[0] != '/') {
    throw sim::InputError(where, "--set", fmt::format("expected /json/pointer=value, got '{}'", a));
  }
  Assignment out{a.substr(0, eq), nullptr};
  const std::string text = a.substr(eq + 1);
  // Not JSON: a bare word such as dgx-h100 or "400 Gbps".
  out.value = sim::parse_json_value(text, where, out.pointer).value_or(text);
  return out;
}

void apply_assignments(nlohmann::json& doc, const std::vector<std::string>& assignments,
                       const std::string& where) {
  for (const std::string& a : assignments) {
    Assignment set = parse_assignment(a, where);
    sim::set_at_pointer(doc, set.pointer, std::move(set.value), where);
  }
}

namespace {

void read_tiers(const sim::JsonValue& tiers, topologies::ScaleOutSpec& so) {
  so.upper_tiers.clear();
  for (const sim::JsonValue& t : tiers.as_array()) {
    sim::ObjectReader tr = t.as_object();
    topologies::ClosTier tier;
    tier.ports = tr.required("ports").as_positive_int32();
    tier.up_ports = tr.optional("up_ports") ? tr.required("up_ports").as_non_negative_int32() : 0;
    tier.up_bandwidth = tr.optional("up_bandwidth") ? tr.required("up_bandwidth").as_bandwidth()
                                                    : so.leaf_up_bandwidth;
    tr.finish();
    so.upper_tiers.push_back(tier);
  }
}

nlohmann::json tiers_to_json(const std::vector<topologies::ClosTier>& tiers) {
  nlohmann::json out = nlohmann::json::array();
  for (const topologies::ClosTier& t : tiers) {
    nlohmann::json tier = {{"ports", t.ports}, {"up_ports", t.up_ports}};
    // The top tier has no uplinks, so no uplink rate to state (the reader wants a positive one).
    if (t.up_ports > 0) tier["up_bandwidth"] = exact_bandwidth(t.up_bandwidth.bytes_per_s());
    out.push_back(tier);
  }
  return out;
}

}  // namespace

void read_system(const sim::JsonValue& sys, Scenario& sc) {
  SettingTarget target{sc, {}};
  sim::ObjectReader r = sys.as_object();
  read_settings("/system", r, target);
  sc.cluster = sc.preset->make(sc.gpus);
  if (auto nv = r.optional("nvlink")) {
    if (!sc.cluster.nvlink) nv->fail_message("this system has no NVLink domain to change");
    sim::ObjectReader nr = nv->as_object();
    read_settings("/system/nvlink", nr, target);
    nr.finish();
  }
  if (auto fabric = r.optional("fabric")) {
    if (!sc.cluster.scale_out)
      fabric->fail_message("this system has no scale-out fabric to change");
    sim::ObjectReader fr = fabric->as_object();
    read_settings("/system/fabric", fr, target);
    if (auto tiers = fr.optional("tiers")) read_tiers(*tiers, *sc.cluster.scale_out);
    fr.finish();
  }
  r.finish();
  try {
    // Built here to reject impossible fabrics with the location, and kept for the evaluator.
    sc.topology =
        std::make_shared<const topologies::Topology>(topologies::build_cluster(sc.cluster));
  } catch (const topologies::SpecError& e) {
    const std::string field = e.field() == "gpus" ? "/system/gpus" : "/system";
    throw sim::InputError(sys.file(), field,
                          e.field().empty() || e.field() == "gpus"
                              ? std::string(e.what())
                              : fmt::format("{} ({})", e.what(), e.field()));
  }
}

namespace {

std::shared_ptr<const topologies::Topology> slow_link_topology(const Scenario& sc,
                                                               const sim::JsonValue& root) {
  try {
    return std::make_shared<const topologies::Topology>(
        models::with_slow_nic_links(*sc.topology, sc.operations.stragglers.links));
  } catch (const std::invalid_argument& e) {
    throw sim::InputError(root.file(), "/stragglers/links", e.what());
  }
}

}  // namespace

Scenario read_scenario(const sim::JsonValue& root, bool check_plan) {
  Scenario sc;
  sc.source = root.file();
  sim::ObjectReader top = root.as_object();
  top.ignore("comment");
  top.ignore("scale");  // the scaling study's section, read by read_scaling_study

  read_system(top.required("system"), sc);

  // Model.
  sc.model = models::read_model(top.required("model"));
  models::validate_model(sc.model, root.file());

  SettingTarget target{sc, {}};
  // Software: the stack preset sets defaults that explicit training/parallelism keys override.
  if (auto sw = top.optional("software")) {
    sim::ObjectReader r = sw->as_object();
    read_settings("/software", r, target);
    r.finish();
    const SoftwareChoice& choice = target.software;
    if (const models::SoftwareStack* preset = models::find_software(choice.framework)) {
      sc.lowering.software = *preset;  // a preset id is accepted as the framework too
    } else {
      sc.lowering.software =
          models::software_for(choice.framework, choice.version, choice.released);
    }
    // The MoE token dispatcher of the run (Megatron-Core's moe_token_dispatcher_type alltoall, or
    // flex with the DeepEP or HybridEP backend), over the preset's.
    if (choice.moe_dispatcher) sc.lowering.software.moe_dispatcher = *choice.moe_dispatcher;
    if (choice.grouped_gemm) sc.lowering.software.grouped_gemm = *choice.grouped_gemm;
    if (choice.cuda_graphs) sc.lowering.software.cuda_graphs = *choice.cuda_graphs;
    if (choice.graph_moe_router) sc.lowering.software.graph_moe_router = *choice.graph_moe_router;
    if (choice.eager_elementwise)
      sc.lowering.software.eager_elementwise = *choice.eager_elementwise;
    if (choice.fused_moe_mlp) sc.lowering.software.fused_moe_mlp = *choice.fused_moe_mlp;
    if (choice.moe_a2a_overlap) sc.lowering.software.moe_a2a_overlap = *choice.moe_a2a_overlap;
    if (choice.moe_a2a_overlap_scope)
      sc.lowering.software.moe_a2a_overlap_scope = *choice.moe_a2a_overlap_scope;
    if (choice.fp8_attention) sc.lowering.software.fp8_attention = *choice.fp8_attention;
    if (choice.fp8_activation_input) {
      // Megatron-Core's TransformerConfig allows it for SwiGLU alone (transformer_config.py,
      // core_v0.15.0: "Storing activation input in FP8 is supported only for SwiGLU").
      if (*choice.fp8_activation_input && sc.model.mlp != models::MlpKind::swiglu) {
        throw sim::InputError(root.file(), "/software/fp8_activation_input",
                              "the activation input is kept in FP8 for SwiGLU MLPs only; this "
                              "model's MLP is not SwiGLU");
      }
      sc.lowering.software.fp8_activation_input = *choice.fp8_activation_input;
    }
    if (choice.fp8_params) sc.lowering.software.fp8_params = *choice.fp8_params;
    if (choice.fp4_params) sc.lowering.software.fp4_params = *choice.fp4_params;
    if (choice.parameter_transpose_cache) {
      // Without FP8 parameters TE's weight copies are per-step workspaces, which this setting
      // does not model.
      if (!*choice.parameter_transpose_cache && !sc.lowering.software.fp8_params) {
        throw sim::InputError(root.file(), "/software/parameter_transpose_cache",
                              "false is modelled for parameters held in FP8 only: set "
                              "fp8_params true too");
      }
      sc.lowering.software.parameter_transpose_cache = *choice.parameter_transpose_cache;
    }
    if (choice.optimizer_state_bytes)
      sc.lowering.software.optimizer_state_bytes = *choice.optimizer_state_bytes;
    if (choice.loss) sc.lowering.software.loss = *choice.loss;
    // The fused MLP's expert GEMMs are grouped kernels.
    if (sc.lowering.software.fused_moe_mlp)
      sc.lowering.software.grouped_gemm = models::GroupedGemmKernel::fused;
  }
  {
    const models::SoftwareStack& stack = sc.lowering.software;
    sc.training.unfused_attention = stack.attention == models::AttentionKernel::unfused;
    sc.plan.tp_comm_overlap = stack.tp_comm_overlap;
    sc.plan.bucket_bytes = stack.bucket_bytes;
    sc.plan.bucket_bytes_per_dp_rank = stack.bucket_bytes_per_dp_rank;
    sc.plan.recompute = stack.recompute;
  }

  {
    sim::ObjectReader r = top.required("training").as_object();
    read_settings("/training", r, target);
    r.finish();
  }

  {
    const sim::JsonValue pv = top.required("parallelism");
    sim::ObjectReader r = pv.as_object();
    models::ParallelPlan& p = sc.plan;
    read_settings("/parallelism", r, target);
    if (!r.has("dp")) {  // what tp x pp x cp leaves of the GPUs
      const int64_t rest = int64_t{p.tp} * p.pp * p.cp;
      if (sc.gpus % rest != 0) {
        pv.fail_message(
            fmt::format("tp x pp x cp = {} does not divide the {} GPUs", rest, sc.gpus));
      }
      p.dp = static_cast<int>(sc.gpus / rest);
    }
    r.finish();
    if (check_plan) {
      models::validate_plan(p, sc.training, sc.model, sc.gpus, root.file(), "/parallelism");
    }
  }

  read_settings("", top, target);
  if (auto sim_opts = top.optional("simulation")) {
    sim::ObjectReader r = sim_opts->as_object();
    read_settings("/simulation", r, target);
    r.finish();
  }
  read_operations(top, sc.operations, sc.gpus, std::max(1, sc.cluster.gpus_per_server));
  for (const char* key : {"reliability", "checkpoint", "storage", "stragglers"}) {
    if (top.has(key)) sc.operations_input[key] = root.raw()[key];
  }
  if (sc.operations.stragglers.any()) {  // every rank runs its own program
    sc.simulation.compute_slowdown = sc.operations.compute_slowdown;
    sc.simulation.full_ranks = true;
    if (!sc.operations.stragglers.links.empty()) sc.topology = slow_link_topology(sc, root);
  }
  top.finish();
  return sc;
}

const topologies::GpuSpec& scenario_gpu(const Scenario& s) {
  return *topologies::find_gpu(s.preset->gpu);
}

Scenario read_search_base(nlohmann::json doc, const std::string& source) {
  if (doc.contains("parallelism") && doc["parallelism"].is_object()) {
    for (const char* key : {"tp", "pp", "dp", "cp", "ep", "vp", "micro_batch"})
      doc["parallelism"].erase(key);
  }
  const sim::JsonDocument parsed(std::move(doc), source);
  return read_scenario(parsed.root(), false);
}

nlohmann::json plan_to_json(const models::ParallelPlan& p) {
  Scenario s;
  s.plan = p;
  nlohmann::json plan = echo_settings(s)["parallelism"];
  plan.erase("bucket_size");
  return plan;
}

nlohmann::json scenario_to_json(const Scenario& s) {
  nlohmann::json doc = echo_settings(s);
  doc["model"] = models::model_to_json(s.model);
  if (s.cluster.scale_out)
    doc["system"]["fabric"]["tiers"] = tiers_to_json(s.cluster.scale_out->upper_tiers);
  doc.update(s.operations_input);
  return doc;
}

nlohmann::json software_to_json(const models::SoftwareStack& stack) {
  return {{"preset", stack.id},
          {"attention_kernel", models::to_string(stack.attention)},
          {"cuda_graphs", models::to_string(stack.cuda_graphs)},
          {"cuda_graph_moe_router", stack.graph_moe_router},
          {"eager_elementwise", stack.eager_elementwise},
          {"fused_moe_mlp", stack.fused_moe_mlp},
          {"moe_a2a_overlap", stack.moe_a2a_overlap},
          {"moe_a2a_overlap_scope", models::to_string(stack.moe_a2a_overlap_scope)},
          {"fp8_attention", stack.fp8_attention},
          {"fp8_params", stack.fp8_params},
          {"fp4_params", stack.fp4_params},
          {"parameter_transpose_cache", stack.parameter_transpose_cache},
          {"fp8_activation_input", stack.fp8_activation_input},
          {"optimizer_state", models::optimizer_state_name(stack.optimizer_state_bytes)},
          {"fsdp", models::to_string(stack.fsdp)},
          {"moe_dispatcher", models::to_string(stack.moe_dispatcher)},
          {"grouped_gemm", models::to_string(stack.grouped_gemm)},
          {"loss_kernel", models::to_string(stack.loss)},
          {"documented", stack.documented}};
}

}  // namespace fabricsim::api
