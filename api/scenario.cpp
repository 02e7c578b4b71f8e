#include "api/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

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

void read_nvlink(sim::ObjectReader& r, topologies::NvlinkDomainSpec& nv) {
  if (auto v = r.optional("gpus_per_domain")) nv.gpus_per_domain = v->as_positive_int32();
  if (auto v = r.optional("gpus_per_board")) nv.gpus_per_board = v->as_positive_int32();
  if (auto v = r.optional("chip_ports")) nv.chip_ports = v->as_positive_int32();
  if (auto v = r.optional("l1_up_ports")) nv.l1_up_ports = v->as_non_negative_int32();
  if (auto v = r.optional("l2_chip_ports")) nv.l2_chip_ports = v->as_non_negative_int32();
  if (auto v = r.optional("link_bandwidth")) nv.link_bandwidth = v->as_bandwidth();
  if (auto v = r.optional("nvls")) nv.nvls = v->as_bool();
  r.finish();
}

void read_fabric(sim::ObjectReader& r, topologies::ScaleOutSpec& so) {
  if (auto v = r.optional("nics_per_server")) so.nics_per_server = v->as_positive_int32();
  if (auto v = r.optional("nic_bandwidth")) {
    so.nic_bandwidth = v->as_bandwidth();
    so.leaf_up_bandwidth = so.nic_bandwidth;
  }
  if (auto v = r.optional("rail_optimized")) so.rail_optimized = v->as_bool();
  if (auto v = r.optional("plane_per_rail")) so.plane_per_rail = v->as_bool();
  if (auto v = r.optional("leaf_down_ports")) so.leaf_down_ports = v->as_positive_int32();
  if (auto v = r.optional("leaf_up_ports")) so.leaf_up_ports = v->as_non_negative_int32();
  if (auto v = r.optional("leaf_up_bandwidth")) so.leaf_up_bandwidth = v->as_bandwidth();
  if (auto v = r.optional("radix")) so.radix = v->as_positive_int32();
  if (auto v = r.optional("collnet")) so.collnet = v->as_bool();
  if (auto v = r.optional("tiers")) {
    so.upper_tiers.clear();
    for (const sim::JsonValue& t : v->as_array()) {
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
  r.finish();
}

models::Recompute read_recompute(const sim::JsonValue& v) {
  const std::string s = v.as_enum({"none", "selective", "full"});
  return s == "none"   ? models::Recompute::none
         : s == "full" ? models::Recompute::full
                       : models::Recompute::selective;
}

}  // namespace

void read_system(const sim::JsonValue& sys, Scenario& sc) {
  sim::ObjectReader r = sys.as_object();
  const sim::JsonValue preset = r.required("preset");
  sc.system = preset.as_string();
  const topologies::SystemPreset* p = topologies::find_system(sc.system);
  if (p == nullptr) preset.fail(fmt::format("one of {}", topologies::system_names()));
  sc.system = p->name;  // an alias names its preset
  sc.gpus = r.required("gpus").as_positive_int32();
  sc.cluster = p->make(sc.gpus);
  if (auto routing = r.optional("routing")) {
    if (!topologies::parse_routing_strategy(routing->as_string(), sc.simulation.routing)) {
      routing->fail("one of " + topologies::routing_strategy_names());
    }
  }
  if (auto nv = r.optional("nvlink")) {
    if (!sc.cluster.nvlink) nv->fail_message("this system has no NVLink domain to change");
    sim::ObjectReader nr = nv->as_object();
    read_nvlink(nr, *sc.cluster.nvlink);
  }
  if (auto fabric = r.optional("fabric")) {
    if (!sc.cluster.scale_out)
      fabric->fail_message("this system has no scale-out fabric to change");
    sim::ObjectReader fr = fabric->as_object();
    read_fabric(fr, *sc.cluster.scale_out);
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

  // Software: the stack preset sets defaults that explicit training/parallelism keys override.
  if (auto sw = top.optional("software")) {
    sim::ObjectReader r = sw->as_object();
    const sim::JsonValue framework = r.required("framework");
    std::string version, released;
    if (auto v = r.optional("version")) version = v->as_string();
    if (auto v = r.optional("released")) released = v->as_string();
    std::optional<sim::JsonValue> dispatcher = r.optional("moe_dispatcher");
    r.finish();
    const std::string name = framework.as_string();
    if (const models::SoftwareStack* preset = models::find_software(name)) {
      sc.lowering.software = *preset;  // a preset id is accepted as the framework too
    } else {
      sc.lowering.software = models::software_for(name, version, released);
    }
    // The MoE token dispatcher of the run (Megatron-Core's moe_token_dispatcher_type alltoall, or
    // flex with the DeepEP backend), over the preset's.
    if (dispatcher)
      sc.lowering.software.deepep = dispatcher->as_enum({"alltoall", "deepep"}) == "deepep";
  }
  {
    const models::SoftwareStack& stack = sc.lowering.software;
    sc.training.unfused_attention = stack.attention == models::AttentionKernel::unfused;
    sc.plan.tp_comm_overlap = stack.tp_comm_overlap;
    sc.plan.bucket_bytes = stack.bucket_bytes;
  }

  // Training.
  {
    sim::ObjectReader r = top.required("training").as_object();
    if (auto task = r.optional("task")) {
      const std::string t = task->as_enum({"pretrain", "sft", "lora"});
      sc.training.task = t == "sft"    ? models::TrainingTask::sft
                         : t == "lora" ? models::TrainingTask::lora
                                       : models::TrainingTask::pretrain;
    }
    if (auto p = r.optional("precision")) {
      if (!topologies::parse_precision(p->as_string(), sc.training.precision) ||
          sc.training.precision == topologies::Precision::tf32) {
        p->fail("one of bf16, fp16, fp8, mxfp8, nvfp4");
      }
      const topologies::GpuSpec* gpu =
          topologies::find_gpu(topologies::find_system(sc.system)->gpu);
      if (gpu->peak_tflops(sc.training.precision) <= 0) {
        p->fail(fmt::format("a precision the {} has tensor cores for", gpu->id));
      }
    }
    sc.training.global_batch = r.required("global_batch").as_positive_int32();
    if (auto v = r.optional("seq_len")) sc.training.seq_len = v->as_positive_int32();
    if (auto v = r.optional("lora_rank")) sc.training.lora_rank = v->as_positive_int32();
    if (auto v = r.optional("fp8_blockwise")) sc.training.fp8_blockwise = v->as_bool();
    if (auto v = r.optional("causal")) sc.training.causal = v->as_bool();
    if (auto v = r.optional("attention_kernel")) {
      // "flash" keeps the stack's flash kernel (cuDNN's where the stack had none).
      const std::string k =
          v->as_enum({"flash", "unfused", "flash2", "flash3", "flash_triton", "cudnn"});
      models::AttentionKernel& kernel = sc.lowering.software.attention;
      if (k == "unfused") kernel = models::AttentionKernel::unfused;
      if (k == "flash" && kernel == models::AttentionKernel::unfused)
        kernel = models::AttentionKernel::cudnn;
      if (k == "flash2") kernel = models::AttentionKernel::flash2;
      if (k == "flash3") kernel = models::AttentionKernel::flash3;
      if (k == "flash_triton") kernel = models::AttentionKernel::flash_triton;
      if (k == "cudnn") kernel = models::AttentionKernel::cudnn;
      sc.training.unfused_attention = kernel == models::AttentionKernel::unfused;
    }
    if (auto v = r.optional("tokens_to_train"))
      sc.training.tokens_to_train = v->as_positive_number();
    if (auto v = r.optional("sft_document_tokens")) {
      sc.lowering.sft_document_tokens = v->as_positive_int32();
    }
    r.finish();
  }

  // Parallelism.
  {
    const sim::JsonValue pv = top.required("parallelism");
    sim::ObjectReader r = pv.as_object();
    models::ParallelPlan& p = sc.plan;
    // A dimension over GPUs is at most the GPU count, so products of them cannot overflow.
    auto size = [&](const char* key, int fallback, bool over_gpus = false) {
      auto v = r.optional(key);
      if (!v) return fallback;
      const int n = v->as_positive_int32();
      if (over_gpus && n > sc.gpus) v->fail(fmt::format("at most the {} GPUs", sc.gpus));
      return n;
    };
    p.tp = size("tp", 1, true);
    p.pp = size("pp", 1, true);
    p.cp = size("cp", 1, true);
    p.ep = size("ep", 1, true);
    p.vp = size("vp", 1);
    p.micro_batch = size("micro_batch", 1);
    if (r.optional("dp")) {
      p.dp = size("dp", 1, true);
    } else {
      const int64_t rest = int64_t{p.tp} * p.pp * p.cp;
      if (sc.gpus % rest != 0) {
        pv.fail_message(
            fmt::format("tp x pp x cp = {} does not divide the {} GPUs", rest, sc.gpus));
      }
      p.dp = static_cast<int>(sc.gpus / rest);
    }
    if (auto v = r.optional("sequence_parallel")) p.sequence_parallel = v->as_bool();
    if (auto v = r.optional("zero")) {
      p.zero = v->as_non_negative_int32();
      if (p.zero > 3) v->fail("a ZeRO stage 0..3");
    }
    if (auto v = r.optional("recompute")) p.recompute = read_recompute(*v);
    if (auto v = r.optional("tp_comm_overlap")) p.tp_comm_overlap = v->as_bool();
    if (auto v = r.optional("dp_comm_overlap")) p.dp_comm_overlap = v->as_bool();
    if (auto v = r.optional("param_gather_overlap")) p.param_gather_overlap = v->as_bool();
    if (auto v = r.optional("bucket_size")) p.bucket_bytes = v->as_bytes().count();
    if (auto v = r.optional("balanced_pipeline")) p.balanced_pipeline = v->as_bool();
    if (auto v = r.optional("order")) {
      const auto order = models::parse_order(v->as_string());
      if (!order) v->fail("an order of tp, cp, dp and pp such as \"tp-cp-ep-dp-pp\"");
      p.order = *order;
    }
    r.finish();
    if (check_plan) {
      models::validate_plan(p, sc.training, sc.model, sc.gpus, root.file(), "/parallelism");
    }
  }

  if (auto c = top.optional("calibration")) sc.calibration = c->as_string();
  if (auto sim_opts = top.optional("simulation")) {
    sim::ObjectReader r = sim_opts->as_object();
    if (auto b = r.optional("backend")) {
      sc.simulation.backend = b->as_enum({"flow", "analytical"}) == "flow"
                                  ? models::Backend::flow
                                  : models::Backend::analytical;
    }
    if (auto v = r.optional("full_ranks")) sc.simulation.full_ranks = v->as_bool();
    if (auto v = r.optional("pp_all_instances")) sc.simulation.pp_all_instances = v->as_bool();
    if (auto v = r.optional("collnet")) {
      sc.simulation.collnet = v->as_bool();
      if (sc.simulation.collnet && !(sc.cluster.scale_out && sc.cluster.scale_out->collnet)) {
        v->fail_message(
            "this system's fabric has no in-network reduction (SHARP); see system.fabric.collnet");
      }
    }
    if (auto v = r.optional("ignore_memory")) sc.ignore_memory = v->as_bool();
    r.finish();
  }
  read_operations(top, sc.operations, sc.gpus, std::max(1, sc.cluster.gpus_per_server));
  if (sc.operations.stragglers.any()) {  // every rank runs its own program
    sc.simulation.compute_slowdown = sc.operations.compute_slowdown;
    sc.simulation.full_ranks = true;
    if (!sc.operations.stragglers.links.empty()) sc.topology = slow_link_topology(sc, root);
  }
  top.finish();
  return sc;
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
  const models::Placement placement(p, p.gpus());
  return {{"tp", p.tp},
          {"pp", p.pp},
          {"dp", p.dp},
          {"cp", p.cp},
          {"ep", p.ep},
          {"vp", p.vp},
          {"micro_batch", p.micro_batch},
          {"sequence_parallel", p.sequence_parallel},
          {"zero", p.zero},
          {"recompute", std::string(models::to_string(p.recompute))},
          {"tp_comm_overlap", p.tp_comm_overlap},
          {"dp_comm_overlap", p.dp_comm_overlap},
          {"param_gather_overlap", p.param_gather_overlap},
          {"balanced_pipeline", p.balanced_pipeline},
          {"order", placement.order_string()}};
}

nlohmann::json scenario_summary_json(const Scenario& s) {
  return {{"system", s.system},
          {"gpus", s.gpus},
          {"model", models::model_to_json(s.model)},
          {"parallelism", plan_to_json(s.plan)},
          {"training",
           {{"task", std::string(models::to_string(s.training.task))},
            {"precision", std::string(topologies::to_string(s.training.precision))},
            {"global_batch", s.training.global_batch},
            {"seq_len", models::sequence_length(s.training, s.model)}}},
          {"software",
           {{"preset", s.lowering.software.id},
            {"attention_kernel", models::to_string(s.lowering.software.attention)},
            {"cuda_graphs", models::to_string(s.lowering.software.cuda_graphs)},
            {"fsdp", models::to_string(s.lowering.software.fsdp)},
            {"deepep", s.lowering.software.deepep},
            {"documented", s.lowering.software.documented}}},
          {"backend", std::string(models::to_string(s.simulation.backend))},
          {"routing", std::string(topologies::to_string(s.simulation.routing))}};
}

}  // namespace fabricsim::api
