#include "api/scenario_settings.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "api/scenario.hpp"
#include "topologies/router.hpp"
#include "topologies/system_presets.hpp"

namespace fabricsim::api {
namespace {

using nlohmann::json;
using sim::JsonValue;

/// The read and echo of a plain field, from one accessor `[](auto& s) { return &s.field; }`
/// (a null pointer where the scenario has no such part: a system without NVLink).
struct SettingIo {
  SettingRead read;
  SettingEcho echo;
};

template <class Get>
constexpr SettingEcho echo_of(Get) {
  return [](const Scenario& s) -> json {
    const auto* p = Get{}(s);
    return p != nullptr ? json(*p) : json();
  };
}

template <class Get>
constexpr SettingIo boolean_field(Get get) {
  return {[](const JsonValue& v, SettingTarget& t) { *Get{}(t.scenario) = v.as_bool(); },
          echo_of(get)};
}

/// A switch of the `software` section over the stack preset's: read into the choice's `Choice`,
/// echoed from the resolved stack's `Stack`.
template <auto Choice, auto Stack>
constexpr SettingIo software_switch() {
  return {[](const JsonValue& v, SettingTarget& t) { t.software.*Choice = v.as_bool(); },
          [](const Scenario& s) -> json { return s.lowering.software.*Stack; }};
}

template <class Get>
constexpr SettingIo count_field(Get get) {
  return {[](const JsonValue& v, SettingTarget& t) { *Get{}(t.scenario) = v.as_positive_int32(); },
          echo_of(get)};
}

template <class Get>
constexpr SettingIo natural_field(Get get) {
  return {
      [](const JsonValue& v, SettingTarget& t) { *Get{}(t.scenario) = v.as_non_negative_int32(); },
      echo_of(get)};
}

template <class Get>
constexpr SettingIo bandwidth_field(Get) {
  return {[](const JsonValue& v, SettingTarget& t) { *Get{}(t.scenario) = v.as_bandwidth(); },
          [](const Scenario& s) -> json {
            const auto* p = Get{}(s);
            return p != nullptr ? json(exact_bandwidth(p->bytes_per_s())) : json();
          }};
}

/// A parallel size over GPUs is at most the GPU count, so products of them cannot overflow.
template <class Get>
constexpr SettingIo gpu_dimension(Get get) {
  return {[](const JsonValue& v, SettingTarget& t) {
            const int n = v.as_positive_int32();
            if (n > t.scenario.gpus) v.fail(fmt::format("at most the {} GPUs", t.scenario.gpus));
            *Get{}(t.scenario) = n;
          },
          echo_of(get)};
}

/// Accessors of a field of the NVLink domain or the scale-out fabric, null on a system without one.
template <auto Member>
constexpr auto in_nvlink() {
  return [](auto& s) { return s.cluster.nvlink ? &(*s.cluster.nvlink.*Member) : nullptr; };
}
template <auto Member>
constexpr auto in_fabric() {
  return [](auto& s) { return s.cluster.scale_out ? &(*s.cluster.scale_out.*Member) : nullptr; };
}

constexpr Setting row(Setting s, SettingIo io) {
  s.read = io.read;
  s.echo = io.echo;
  return s;
}

/// The row of a boolean switch of the `software` section (software_switch): its default is the
/// stack preset's.
template <auto Choice, auto Stack>
constexpr Setting software_flag(std::string_view pointer, std::string_view meaning) {
  return row({.pointer = pointer,
              .kind = SettingKind::boolean,
              .type = "boolean",
              .fallback = "the preset's",
              .meaning = meaning},
             software_switch<Choice, Stack>());
}

constexpr Setting kSettings[] = {
    // system
    {.pointer = "/system",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "required",
     .meaning = "[system](#system) preset, GPU count and overrides"},
    row({.pointer = "/system/preset",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "required",
         .meaning = "system preset ([list](#system-presets))",
         .flag = "--system PRESET",
         .help = "System preset",
         .required = true},
        {[](const JsonValue& v, SettingTarget& t) {
           const topologies::SystemPreset* p = topologies::find_system(v.as_string());
           if (p == nullptr) v.fail(fmt::format("one of {}", topologies::system_names()));
           t.scenario.preset = p;  // an alias names its preset
         },
         [](const Scenario& s) -> json { return s.system(); }}),
    row({.pointer = "/system/gpus",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "required",
         .meaning = "GPU count, at most 262,144 (`topologies::kMaxGpus`); a multiple of the "
                    "preset's GPUs per server, or fewer GPUs than one server (a part of one "
                    "server, as single-node benchmarks run)",
         .flag = "--gpus N",
         .help = "Number of GPUs",
         .required = true},
        count_field([](auto& s) { return &s.gpus; })),
    row({.pointer = "/system/routing",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "`ecmp`",
         .meaning = "how traffic between scale-up domains picks its path through the Clos "
                    "fabric, below"},
        {[](const JsonValue& v, SettingTarget& t) {
           if (!topologies::parse_routing_strategy(v.as_string(), t.scenario.simulation.routing))
             v.fail("one of " + topologies::routing_strategy_names());
         },
         [](const Scenario& s) -> json {
           return std::string(topologies::to_string(s.simulation.routing));
         }}),
    {.pointer = "/system/nvlink",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "preset",
     .meaning = "changes to the NVLink domain (keys below); an error on a system without one "
                "(`generic-h100-pcie-eth`: `this system has no NVLink domain to change`)"},
    {.pointer = "/system/fabric",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "preset",
     .meaning = "changes to the scale-out fabric (keys below)"},

    // system.nvlink
    row({.pointer = "/system/nvlink/gpus_per_domain",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "preset",
         .meaning = "GPUs sharing one NVLink domain"},
        count_field(in_nvlink<&topologies::NvlinkDomainSpec::gpus_per_domain>())),
    row({.pointer = "/system/nvlink/gpus_per_board",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "preset",
         .meaning = "GPUs attached to the same first-tier switch chips"},
        count_field(in_nvlink<&topologies::NvlinkDomainSpec::gpus_per_board>())),
    row({.pointer = "/system/nvlink/segment",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "the whole domain",
         .meaning = "GPUs of each NVLink domain the job takes (Slurm `--segment` x GPUs per "
                    "node): consecutive ranks fill domains of this many GPUs; a multiple of the "
                    "GPUs per server, at most the domain; on a one-board domain the board shrinks "
                    "with it (the same switch chips, fewer GPUs on them)"},
        {[](const JsonValue& v, SettingTarget& t) {
           topologies::ClusterSpec& c = t.scenario.cluster;
           if (!c.nvlink) v.fail("a system with an NVLink domain");
           topologies::NvlinkDomainSpec& nv = *c.nvlink;
           const int n = v.as_positive_int32();
           if (n > nv.gpus_per_domain || n % c.gpus_per_server != 0) {
             v.fail(fmt::format("a multiple of the {} GPUs per server, at most the domain's {}",
                                c.gpus_per_server, nv.gpus_per_domain));
           }
           if (nv.gpus_per_board == nv.gpus_per_domain) nv.gpus_per_board = n;
           nv.gpus_per_domain = n;
         },
         [](const Scenario&) -> json { return json(); }}),
    row({.pointer = "/system/nvlink/chip_ports",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "preset",
         .meaning = "NVLink ports of one switch chip"},
        count_field(in_nvlink<&topologies::NvlinkDomainSpec::chip_ports>())),
    row({.pointer = "/system/nvlink/l1_up_ports",
         .kind = SettingKind::natural,
         .type = "integer >= 0",
         .fallback = "preset",
         .meaning = "uplinks of each first-tier chip, for domains larger than a board (two tiers)"},
        natural_field(in_nvlink<&topologies::NvlinkDomainSpec::l1_up_ports>())),
    row({.pointer = "/system/nvlink/l2_chip_ports",
         .kind = SettingKind::natural,
         .type = "integer >= 0",
         .fallback = "preset",
         .meaning = "ports of each second-tier chip (two tiers)"},
        natural_field(in_nvlink<&topologies::NvlinkDomainSpec::l2_chip_ports>())),
    row({.pointer = "/system/nvlink/link_bandwidth",
         .kind = SettingKind::bandwidth,
         .type = "bandwidth",
         .fallback = "preset",
         .meaning = "one NVLink link, one direction (DGX H100: 25 GB/s)"},
        bandwidth_field(in_nvlink<&topologies::NvlinkDomainSpec::link_bandwidth>())),
    row({.pointer = "/system/nvlink/nvls",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "preset",
         .meaning = "NVLink SHARP (in-switch reduction) available"},
        boolean_field(in_nvlink<&topologies::NvlinkDomainSpec::nvls>())),

    // system.fabric
    row({.pointer = "/system/fabric/nics_per_server",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "preset",
         .meaning = "scale-out NICs per server (per tray on NVL72 systems)"},
        count_field(in_fabric<&topologies::ScaleOutSpec::nics_per_server>())),
    row({.pointer = "/system/fabric/nic_bandwidth",
         .kind = SettingKind::bandwidth,
         .type = "bandwidth",
         .fallback = "preset",
         .meaning = "line rate of one NIC port, one direction; also sets `leaf_up_bandwidth` "
                    "unless that is given"},
        {[](const JsonValue& v, SettingTarget& t) {
           topologies::ScaleOutSpec& so = *t.scenario.cluster.scale_out;
           so.nic_bandwidth = v.as_bandwidth();
           so.leaf_up_bandwidth = so.nic_bandwidth;
         },
         bandwidth_field(in_fabric<&topologies::ScaleOutSpec::nic_bandwidth>()).echo}),
    row({.pointer = "/system/fabric/rail_optimized",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "preset",
         .meaning = "leaf r serves NIC r of a group of servers (else a top-of-rack design)"},
        boolean_field(in_fabric<&topologies::ScaleOutSpec::rail_optimized>())),
    row({.pointer = "/system/fabric/plane_per_rail",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "preset",
         .meaning = "each rail is its own independent Clos (multi-plane); traffic cannot cross "
                    "planes in the fabric"},
        boolean_field(in_fabric<&topologies::ScaleOutSpec::plane_per_rail>())),
    row({.pointer = "/system/fabric/leaf_down_ports",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "preset",
         .meaning = "leaf ports toward NICs"},
        count_field(in_fabric<&topologies::ScaleOutSpec::leaf_down_ports>())),
    row({.pointer = "/system/fabric/leaf_up_ports",
         .kind = SettingKind::natural,
         .type = "integer >= 0",
         .fallback = "preset",
         .meaning = "leaf uplinks"},
        natural_field(in_fabric<&topologies::ScaleOutSpec::leaf_up_ports>())),
    row({.pointer = "/system/fabric/leaf_up_bandwidth",
         .kind = SettingKind::bandwidth,
         .type = "bandwidth",
         .fallback = "preset",
         .meaning = "per leaf uplink port"},
        bandwidth_field(in_fabric<&topologies::ScaleOutSpec::leaf_up_bandwidth>())),
    row({.pointer = "/system/fabric/radix",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "preset",
         .meaning = "switch radix used to derive the upper tiers when the tier list is empty "
                    "(all presets but `meta-h100-roce`, or `\"tiers\": []`)"},
        count_field(in_fabric<&topologies::ScaleOutSpec::radix>())),
    row({.pointer = "/system/fabric/collnet",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "preset",
         .meaning = "in-network reduction (InfiniBand SHARP) in the switches"},
        boolean_field(in_fabric<&topologies::ScaleOutSpec::collnet>())),
    {.pointer = "/system/fabric/tiers",
     .kind = SettingKind::object,
     .type = "array",
     .fallback = "preset",
     .meaning = "the tiers above the leaves, bottom up, replacing the preset's; `[]` derives "
                "them from `radix`"},
    {.pointer = "/model",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "required",
     .meaning = "a [model description](#3-model-description): a preset, with or without "
                "overrides, or a full description",
     .flag = "--model PRESET",
     .help = "Model preset"},

    // parallelism
    {.pointer = "/parallelism",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "required (may be `{}`)",
     .meaning = "[parallelism plan](#parallelism)"},
    row({.pointer = "/parallelism/tp",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "1",
         .meaning = "tensor parallel size",
         .flag = "--tp N",
         .help = "Tensor parallel size"},
        gpu_dimension([](auto& s) { return &s.plan.tp; })),
    row({.pointer = "/parallelism/pp",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "1",
         .meaning = "pipeline parallel size",
         .flag = "--pp N",
         .help = "Pipeline parallel size"},
        gpu_dimension([](auto& s) { return &s.plan.pp; })),
    row({.pointer = "/parallelism/cp",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "1",
         .meaning = "context parallel size",
         .flag = "--cp N",
         .help = "Context parallel size"},
        gpu_dimension([](auto& s) { return &s.plan.cp; })),
    row({.pointer = "/parallelism/cp_comm_type",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "`p2p` (Megatron-Core's default)",
         .meaning = "how context-parallel ranks share attention (Megatron-Core's cp_comm_type): "
                    "`p2p` passes K and V around a ring, each step attending one block; `a2a` "
                    "trades sequence shards for head shards by all-to-all (heads divisible by "
                    "cp); `all_gather` gathers every rank's K and V before attention and "
                    "reduce-scatters their gradients after it (Transformer Engine's fused "
                    "attention runs a sliding window only under `a2a` or `all_gather`)",
         .choices = "p2p|a2a|all_gather"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.scenario.plan.cp_comm = *models::cp_comm_from(v.as_string());  // a listed choice
         },
         [](const Scenario& s) -> json { return std::string(models::to_string(s.plan.cp_comm)); }}),
    row({.pointer = "/parallelism/dp",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "GPUs / (tp x pp x cp)",
         .meaning = "data parallel size; without it, tp x pp x cp must divide the GPU count",
         .flag = "--dp N",
         .help = "Data parallel size (default: what is left)"},
        gpu_dimension([](auto& s) { return &s.plan.dp; })),
    row({.pointer = "/parallelism/ep",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "1",
         .meaning = "expert parallel size (MoE models only); experts are sharded over the "
                    "tp x cp x dp ranks of a pipeline stage, so `ep` is not a separate factor "
                    "of the GPU count",
         .flag = "--ep N",
         .help = "Expert parallel size"},
        gpu_dimension([](auto& s) { return &s.plan.ep; })),
    row({.pointer = "/parallelism/vp",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "1",
         .meaning = "virtual pipeline stages per pipeline rank (interleaved 1F1B when > 1)",
         .flag = "--vp N",
         .help = "Virtual pipeline stages (interleaving)"},
        count_field([](auto& s) { return &s.plan.vp; })),
    row({.pointer = "/parallelism/micro_batch",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "1",
         .meaning = "sequences per micro-batch per data-parallel rank",
         .flag = "--micro-batch N",
         .help = "Sequences per micro-batch"},
        count_field([](auto& s) { return &s.plan.micro_batch; })),
    row({.pointer = "/parallelism/sequence_parallel",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`true`",
         .meaning = "Megatron sequence parallelism (with tp > 1)"},
        boolean_field([](auto& s) { return &s.plan.sequence_parallel; })),
    row({.pointer = "/parallelism/zero",
         .kind = SettingKind::stage,
         .type = "integer 0-3",
         .fallback = "1",
         .meaning = "0: plain data parallelism; 1: distributed optimizer; 2: also sharded "
                    "gradients; 3: also sharded parameters (FSDP), gathered per pass",
         .flag = "--zero N",
         .help = "ZeRO stage (0-3)"},
        {[](const JsonValue& v, SettingTarget& t) {
           const int zero = v.as_non_negative_int32();
           if (zero > 3) v.fail("a ZeRO stage 0..3");
           t.scenario.plan.zero = zero;
         },
         echo_of([](auto& s) { return &s.plan.zero; })}),
    row({.pointer = "/parallelism/recompute",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "the software preset's (`selective`; `full` for `nemo-automodel`)",
         .meaning = "activation recomputation: `none`, `selective`, `full`",
         .flag = "--recompute MODE",
         .help = "none, selective or full",
         .choices = "none|selective|full"},
        {[](const JsonValue& v, SettingTarget& t) {
           const std::string s = v.as_string();
           t.scenario.plan.recompute = s == "none"   ? models::Recompute::none
                                       : s == "full" ? models::Recompute::full
                                                     : models::Recompute::selective;
         },
         [](const Scenario& s) -> json {
           return std::string(models::to_string(s.plan.recompute));
         }}),
    row({.pointer = "/parallelism/recompute_layers",
         .kind = SettingKind::natural,
         .type = "non-negative integer",
         .fallback = "0",
         .meaning = "of each model chunk's layers, the first N recompute fully whatever "
                    "`recompute` says (Megatron's recompute_num_layers, block method)",
         .flag = "--recompute-layers N",
         .help = "Layers per model chunk that recompute fully"},
        natural_field([](auto& s) { return &s.plan.recompute_layers; })),
    row({.pointer = "/parallelism/recompute_modules",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "none",
         .meaning = "modules the layers that do not recompute fully rerun in backward instead of "
                    "keeping their outputs (Megatron-Core's recompute_modules under selective "
                    "recomputation), comma-separated: `layernorm`, `moe_act`, `mla_up_proj`, "
                    "`mlp` (`core_attn` is accepted, a no-op under fused attention)"},
        {[](const JsonValue& v, SettingTarget& t) {
           std::string error;
           const auto modules = models::parse_recompute_modules(v.as_string(), &error);
           if (!modules) v.fail_message(error);
           t.scenario.plan.recompute_modules = *modules;
         },
         [](const Scenario& s) -> json {
           if (s.plan.recompute_modules == 0) return json();
           return models::recompute_modules_text(s.plan.recompute_modules);
         }}),
    row({.pointer = "/parallelism/offload_layers",
         .kind = SettingKind::natural,
         .type = "non-negative integer",
         .fallback = "0",
         .meaning = "of each model chunk's layers, the next N after the recomputed ones keep "
                    "their activations in host memory, copied over the GPU's host link (PCIe or "
                    "NVLink-C2C) while neighbouring layers compute; never the chunk's last layer "
                    "(Megatron-Core cpu_offloading_num_layers)",
         .flag = "--offload-layers N",
         .help = "Layers per model chunk whose activations live in host memory"},
        natural_field([](auto& s) { return &s.plan.offload_layers; })),
    row({.pointer = "/parallelism/tp_comm_overlap",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "the software preset's (`true` by default)",
         .meaning = "overlap TP communication with its GEMMs (needs sequence parallelism)"},
        boolean_field([](auto& s) { return &s.plan.tp_comm_overlap; })),
    row({.pointer = "/parallelism/dp_comm_overlap",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`true`",
         .meaning = "overlap the gradient reduction with the backward pass"},
        boolean_field([](auto& s) { return &s.plan.dp_comm_overlap; })),
    row({.pointer = "/parallelism/param_gather_overlap",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`true`",
         .meaning = "overlap ZeRO parameter all-gathers with the forward pass"},
        boolean_field([](auto& s) { return &s.plan.param_gather_overlap; })),
    row({.pointer = "/parallelism/bucket_size",
         .kind = SettingKind::size,
         .type = "size (string or number of bytes)",
         .fallback = "the software preset's: Megatron-Core's default of max(40M, 1M x dp x cp) "
                     "parameters for `megatron-core-r0.8.0`, the `default` stack and NeMo 24.07 "
                     "(fp32 gradients: 4 bytes each; bf16: 2), NeMo 2's and Megatron-Bridge's "
                     "128 Mi parameters of bf16 gradients (256 MiB); one bucket per layer for "
                     "`llm-foundry` and the 2021-22 Megatron-LM presets",
         .meaning = "gradient bucket size (fixed: it no longer grows with the data-parallel "
                    "ranks)"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.scenario.plan.bucket_bytes = v.as_bytes().count();
           t.scenario.plan.bucket_bytes_per_dp_rank = 0;
         },
         // The size this run used; one bucket per layer (0) is only ever the preset's, which the
         // echo names.
         [](const Scenario& s) -> json {
           const double bytes = s.plan.gradient_bucket_bytes();
           return bytes > 0 ? json(bytes) : json();
         }}),
    row({.pointer = "/parallelism/balanced_pipeline",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`false`",
         .meaning = "allow layers not divisible by pp x vp: the first and last virtual stages "
                    "(which also hold the embedding and the LM head) take fewer"},
        boolean_field([](auto& s) { return &s.plan.balanced_pipeline; })),
    row({.pointer = "/parallelism/pipeline_layout",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "none",
         .meaning = "what each virtual stage builds, as Megatron-Core's "
                    "pipeline_model_parallel_layout writes it: `E` embedding, `t` decoder layer, "
                    "`m` multi-token-prediction module, `L` output head and loss, `|` ends a "
                    "stage, `X*n` and `(...)*n` repeat (`\"Et*4|(t*4|)*14tmL\"`); pp x vp stages "
                    "in chunk-major order, in the model's order E t... m... L. Without it the "
                    "layers split evenly (see `balanced_pipeline`) and MTP modules sit with the "
                    "loss"},
        {[](const JsonValue& v, SettingTarget& t) {
           std::string error;
           if (!models::parse_pipeline_layout(v.as_string(), &error)) v.fail_message(error);
           t.scenario.plan.pipeline_layout = v.as_string();
         },
         [](const Scenario& s) -> json {
           if (s.plan.pipeline_layout.empty()) return json();
           return s.plan.pipeline_layout;
         }}),
    row({.pointer = "/parallelism/order",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "`\"tp-cp-dp-pp\"`",
         .meaning = "rank placement, innermost first: a permutation of `tp`, `cp`, `dp`, `pp` "
                    "joined by `-`; an `ep` entry is accepted and ignored"},
        {[](const JsonValue& v, SettingTarget& t) {
           const auto order = models::parse_order(v.as_string());
           if (!order) v.fail("an order of tp, cp, dp and pp such as \"tp-cp-ep-dp-pp\"");
           t.scenario.plan.order = *order;
         },
         [](const Scenario& s) -> json {
           return models::Placement(s.plan, s.plan.gpus()).order_string();
         }}),

    // training
    {.pointer = "/training",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "required",
     .meaning = "[training configuration](#training)"},
    row({.pointer = "/training/global_batch",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "required",
         .meaning = "sequences per optimizer step",
         .flag = "--global-batch N",
         .help = "Sequences per step",
         .required = true},
        count_field([](auto& s) { return &s.training.global_batch; })),
    row({.pointer = "/training/task",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "`pretrain`",
         .meaning = "`pretrain`, `sft` (fine-tuning on packed sequences), `lora` (base weights "
                    "frozen)",
         .flag = "--task TASK",
         .help = "pretrain, sft or lora",
         .choices = "pretrain|sft|lora"},
        {[](const JsonValue& v, SettingTarget& t) {
           const std::string task = v.as_string();
           t.scenario.training.task = task == "sft"    ? models::TrainingTask::sft
                                      : task == "lora" ? models::TrainingTask::lora
                                                       : models::TrainingTask::pretrain;
         },
         [](const Scenario& s) -> json {
           return std::string(models::to_string(s.training.task));
         }}),
    row({.pointer = "/training/precision",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "`bf16`",
         .meaning = "math precision: `bf16`, `fp16`, `fp8`, `mxfp8`, `nvfp4` (`tf32` is "
                    "rejected, and so is a precision the system's GPU has no tensor-core rate "
                    "for, e.g. `fp8` on A100)",
         .flag = "--precision P",
         .help = "bf16, fp16, fp8, mxfp8 or nvfp4"},
        {[](const JsonValue& v, SettingTarget& t) {
           topologies::Precision& precision = t.scenario.training.precision;
           if (!topologies::parse_precision(v.as_string(), precision) ||
               precision == topologies::Precision::tf32) {
             v.fail("one of bf16, fp16, fp8, mxfp8, nvfp4");
           }
           const topologies::GpuSpec& gpu = scenario_gpu(t.scenario);
           if (gpu.peak_tflops(precision) <= 0)
             v.fail(fmt::format("a precision the {} has tensor cores for", gpu.id));
         },
         [](const Scenario& s) -> json {
           return std::string(topologies::to_string(s.training.precision));
         }}),
    row({.pointer = "/training/seq_len",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "the model's `seq_len`",
         .meaning = "training sequence length (tokens)",
         .flag = "--seq-len N",
         .help = "Training sequence length"},
        {count_field([](auto& s) { return &s.training.seq_len; }).read,
         [](const Scenario& s) -> json { return models::sequence_length(s.training, s.model); }}),
    row({.pointer = "/training/lora_rank",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "16",
         .meaning = "LoRA adapter rank (task `lora`): adapters on the attention projections (QKV "
                    "and output), the MLP frozen"},
        count_field([](auto& s) { return &s.training.lora_rank; })),
    row({.pointer = "/training/fp8_blockwise",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`false`",
         .meaning = "FP8 with 1x128/128x128 block scaling (DeepSeek) instead of per-tensor "
                    "scaling"},
        boolean_field([](auto& s) { return &s.training.fp8_blockwise; })),
    row({.pointer = "/training/causal",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`true`",
         .meaning = "causal attention mask"},
        boolean_field([](auto& s) { return &s.training.causal; })),
    row({.pointer = "/training/attention_kernel",
         .kind = SettingKind::choice,
         .type = "`\"flash\"`, `\"unfused\"`, `\"flash2\"`, `\"flash3\"`, `\"flash_triton\"`, "
                 "`\"cudnn\"`",
         .fallback = "the software preset's (`\"cudnn\"` by default)",
         .meaning = "`\"flash\"` keeps the preset's flash kernel (cuDNN's where the preset has "
                    "none); `flash2`/`flash3`/`flash_triton`/`cudnn` name the library "
                    "(FlashAttention-2, FlashAttention-3, the Triton FlashAttention of flash-attn "
                    "1.x at 1/1.8 of FA2, cuDNN fused attention); flash-style attention, or the "
                    "pre-2023 kernels that write the score matrix to HBM between two batched "
                    "GEMMs (full score matrix even when causal; recomputed in backward under "
                    "selective recomputation); `\"unfused\"` cannot be combined with cp > 1",
         .choices = "flash|unfused|flash2|flash3|flash_triton|cudnn"},
        {[](const JsonValue& v, SettingTarget& t) {
           // "flash" keeps the stack's flash kernel (cuDNN's where the stack had none).
           const std::string k = v.as_string();
           models::AttentionKernel& kernel = t.scenario.lowering.software.attention;
           if (k == "unfused") kernel = models::AttentionKernel::unfused;
           if (k == "flash" && kernel == models::AttentionKernel::unfused)
             kernel = models::AttentionKernel::cudnn;
           if (k == "flash2") kernel = models::AttentionKernel::flash2;
           if (k == "flash3") kernel = models::AttentionKernel::flash3;
           if (k == "flash_triton") kernel = models::AttentionKernel::flash_triton;
           if (k == "cudnn") kernel = models::AttentionKernel::cudnn;
           t.scenario.training.unfused_attention = kernel == models::AttentionKernel::unfused;
         },
         [](const Scenario& s) -> json {
           return std::string(models::to_string(s.lowering.software.attention));
         }}),
    row({.pointer = "/training/tokens_to_train",
         .kind = SettingKind::number,
         .type = "positive number",
         .fallback = "none",
         .meaning = "tokens of the whole run; adds \"time to train\" (`time_to_train_days`) to "
                    "the report"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.scenario.training.tokens_to_train = v.as_positive_number();
         },
         [](const Scenario& s) -> json {
           return s.training.tokens_to_train > 0 ? json(s.training.tokens_to_train) : json();
         }}),
    row({.pointer = "/training/sft_document_tokens",
         .kind = SettingKind::count,
         .type = "positive integer",
         .fallback = "256",
         .meaning = "average document length inside packed SFT sequences (attention spans one "
                    "document)"},
        count_field([](auto& s) { return &s.lowering.sft_document_tokens; })),

    // software: read into the choice, resolved to a preset by read_scenario
    {.pointer = "/software",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "the `default` preset",
     .meaning = "the [training software](#software): picks a documented stack preset"},
    row({.pointer = "/software/framework",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "required",
         .meaning = "a case-format framework name (`megatron-lm`, `megatron-core`, `nemo`, "
                    "`megatron-bridge`, `llm-foundry`, ...) or a preset id",
         .required = true},
        {[](const JsonValue& v, SettingTarget& t) { t.software.framework = v.as_string(); },
         // The preset as resolved: a preset id reads back as itself.
         [](const Scenario& s) -> json { return s.lowering.software.id; }}),
    row({.pointer = "/software/version",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "none",
         .meaning = "the framework's version as it numbers it (`24.07`, `r0.8.0`, `25.11`)"},
        {[](const JsonValue& v, SettingTarget& t) { t.software.version = v.as_string(); },
         nullptr}),
    row({.pointer = "/software/released",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "none",
         .meaning = "`YYYY-MM`: picks the newest preset of the framework not newer than it when "
                    "the version has no preset"},
        {[](const JsonValue& v, SettingTarget& t) { t.software.released = v.as_string(); },
         nullptr}),
    row({.pointer = "/software/moe_dispatcher",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "the preset's",
         .meaning = "`alltoall` (NCCL all-to-all, Megatron-Core's alltoall dispatcher), "
                    "`deepep` (DeepEP's normal dispatch/combine kernels) or `hybridep` (DeepEP's "
                    "Hybrid-EP TMA kernels), the last two Megatron-Core's flex dispatcher: how "
                    "expert-parallel tokens travel",
         .choices = "alltoall|deepep|hybridep"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.software.moe_dispatcher = models::moe_dispatcher_from(v.as_string());
         },
         [](const Scenario& s) -> json {
           return models::to_string(s.lowering.software.moe_dispatcher);
         }}),
    row({.pointer = "/software/grouped_gemm",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "the preset's",
         .meaning = "`multi_stream` (one cuBLAS GEMM per expert on 4 streams, Transformer "
                    "Engine's GroupedLinear) or `fused` (one grouped kernel over the experts: "
                    "CUTLASS, cuBLASLt grouped GEMM, DeepGEMM): how the expert GEMMs run",
         .choices = "multi_stream|fused"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.software.grouped_gemm = v.as_string() == "fused"
                                         ? models::GroupedGemmKernel::fused
                                         : models::GroupedGemmKernel::multi_stream;
         },
         [](const Scenario& s) -> json {
           return models::to_string(s.lowering.software.grouped_gemm);
         }}),
    row({.pointer = "/software/cuda_graphs",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "the preset's",
         .meaning = "what of each transformer layer is captured in CUDA graphs (no host launch "
                    "per kernel): `none`, `attention` (the attention sub-layer, Transformer "
                    "Engine's scope attn) or `full` (whole dense layers, and MoE layers of "
                    "static shape: drop-and-pad routing without DeepEP)",
         .choices = "none|attention|full"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.software.cuda_graphs = models::cuda_graphs_from(v.as_string());
         },
         [](const Scenario& s) -> json {
           return models::to_string(s.lowering.software.cuda_graphs);
         }}),
    software_flag<&SoftwareChoice::graph_moe_router, &models::SoftwareStack::graph_moe_router>(
        "/software/cuda_graph_moe_router",
        "the MoE router and the dispatcher's preprocessing are captured in CUDA "
        "graphs too (Transformer Engine scopes moe_router, moe_preprocess); the "
        "dropless dispatcher's host sync stays"),
    software_flag<&SoftwareChoice::fused_moe_mlp, &models::SoftwareStack::fused_moe_mlp>(
        "/software/fused_moe_mlp",
        "the experts' MLP runs as fused grouped kernels (Megatron-Core's "
        "cutedsl_fused_grouped_mlp): one kernel per expert GEMM, the GLU activation "
        "and FC2's input quantization in FC1's epilogue, no host sync (the MoE block "
        "can be graphed)"),
    software_flag<&SoftwareChoice::moe_a2a_overlap, &models::SoftwareStack::moe_a2a_overlap>(
        "/software/moe_a2a_overlap",
        "expert-parallel all-to-alls overlap compute (Megatron-Core's "
        "moe_a2a_overlap): each all-to-all runs beside the MoE block's compute up to "
        "the next one, slowing it while it is in flight"),
    row({.pointer = "/software/moe_a2a_overlap_scope",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "the preset's",
         .meaning = "what overlapped all-to-alls hide behind: `modules` (Megatron-Core's combined "
                    "1F1B: each beside the MoE block's compute up to the next one) or `chunk` "
                    "(DeepSeek's DualPipe: a pass's all-to-alls one after another on their own "
                    "stream beside the pass's whole compute, the pass ending when both are "
                    "done); no effect without moe_a2a_overlap",
         .choices = "modules|chunk"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.software.moe_a2a_overlap_scope = models::a2a_overlap_scope_from(v.as_string());
         },
         [](const Scenario& s) -> json {
           return models::to_string(s.lowering.software.moe_a2a_overlap_scope);
         }}),
    software_flag<&SoftwareChoice::fp8_attention, &models::SoftwareStack::fp8_attention>(
        "/software/fp8_attention",
        "attention runs in FP8 in the layers the precision recipe quantizes "
        "(Transformer Engine's fp8_dpa, Megatron-Bridge's fp8_dot_product_attention): "
        "cuDNN's FP8 fused attention, its inputs and output cast around it; no effect "
        "in BF16"),
    software_flag<&SoftwareChoice::fp8_activation_input,
                  &models::SoftwareStack::fp8_activation_input>(
        "/software/fp8_activation_input",
        "the SwiGLU activation's input (FC1's output, dense and expert MLPs) is kept for the "
        "backward in FP8 and cast back before it (Megatron-Core's "
        "activation_func_fp8_input_store, NVIDIA's MLPerf LoRA configurations' FP8_ACT): one "
        "byte per element kept instead of two, a cast kernel each way; SwiGLU models only"),
    software_flag<&SoftwareChoice::fp8_params, &models::SoftwareStack::fp8_params>(
        "/software/fp8_params",
        "in an FP8 run the parameters are kept only in FP8 (Transformer Engine's "
        "fp8_model_init: NeMo's fp8_params, Megatron-Core's fp8_param_gather), no bf16 "
        "copy beside them; the optimizer keeps the master copy"),
    software_flag<&SoftwareChoice::fp4_params, &models::SoftwareStack::fp4_params>(
        "/software/fp4_params",
        "in an NVFP4 run the linear layers' weights are kept only in NVFP4, a rowwise and a "
        "columnwise copy with their scales, no bf16 copy beside them (Megatron-Core's "
        "fp4_param; NVIDIA's MLPerf LoRA code pre-quantizes its frozen base so); a LoRA base "
        "so held is never cast again; a ZeRO parameter gather still moves bf16 (not "
        "modelled in NVFP4); no effect in other precisions"),
    software_flag<&SoftwareChoice::parameter_transpose_cache,
                  &models::SoftwareStack::parameter_transpose_cache>(
        "/software/parameter_transpose_cache",
        "with parameters held in FP8 (fp8_params), Transformer Engine keeps each weight's "
        "transposed FP8 copy between micro-batches for the data-gradient GEMMs of GPUs that "
        "read FP8 in one layout only (Hopper and earlier); false: each backward transposes the "
        "weight afresh (Megatron-Core's disable_parameter_transpose_cache, TE 1.x), one byte "
        "per parameter held instead of two; needs fp8_params"),
    row({.pointer = "/software/optimizer_state",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "the preset's",
         .meaning = "datatype of Adam's state (master parameters and both moments): `fp32` "
                    "(12 bytes per trained parameter) or `bf16` (6: Apex DistributedFusedAdam "
                    "with dtype bf16, as NeMo's SFT recipes run it)",
         .choices = "fp32|bf16"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.software.optimizer_state_bytes = v.as_string() == "bf16" ? 2.0 : 4.0;
         },
         [](const Scenario& s) -> json {
           return models::optimizer_state_name(s.lowering.software.optimizer_state_bytes);
         }}),
    row({.pointer = "/software/loss_kernel",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "the preset's",
         .meaning = "how the cross-entropy over the vocabulary runs: `fp32_upcast` (logits "
                    "upcast to fp32, then max, exp-sum and normalise as separate kernels: "
                    "Megatron's vocab-parallel cross-entropy; 38 bytes per logit forward, 14 "
                    "backward), `megatron_fused` (the same compiled, Megatron-Core's "
                    "cross_entropy_loss_fusion: 22 and 6) or `fused` (one kernel on the bf16 "
                    "logits: Transformer Engine's, flash-attn's; 2 and 4)",
         .choices = "fp32_upcast|megatron_fused|fused"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.software.loss = models::loss_kernel_from(v.as_string());
         },
         [](const Scenario& s) -> json { return models::to_string(s.lowering.software.loss); }}),
    software_flag<&SoftwareChoice::eager_elementwise, &models::SoftwareStack::eager_elementwise>(
        "/software/eager_elementwise",
        "memory-bound ops run as eager PyTorch writes them (RMSNorm and rotary in "
        "fp32, one kernel per elementwise op, repeated GQA keys and values); `false` "
        "for fused kernels (Transformer Engine, torch.compile)"),

    // the calibration profile
    row({.pointer = "/calibration",
         .kind = SettingKind::text,
         .type = "string",
         .fallback = "the system's built-in profile",
         .meaning = "path of a [calibration profile](#5-calibration-profile-json), relative to "
                    "the current directory",
         .flag = "--calibration FILE",
         .help = "Calibration profile JSON"},
        {[](const JsonValue& v, SettingTarget& t) { t.scenario.calibration = v.as_string(); },
         [](const Scenario& s) -> json {
           return s.calibration.empty() ? json() : json(s.calibration);
         }}),

    {.pointer = "/simulation",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "",
     .meaning = "[simulation options](#simulation)"},
    {.pointer = "/scale",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "",
     .meaning = "the [scaling study](#scale); read only by `fabricsim scale`, ignored by `run`"},
    {.pointer = "/reliability",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "",
     .meaning = "[failure classes and recovery](#reliability); read by `fabricsim goodput`"},
    {.pointer = "/checkpoint",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "",
     .meaning = "[checkpointing](#checkpoint); read by `fabricsim goodput`"},
    {.pointer = "/storage",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "",
     .meaning = "[storage system and input pipeline](#storage); read by `fabricsim goodput`"},
    {.pointer = "/stragglers",
     .kind = SettingKind::object,
     .type = "object",
     .fallback = "",
     .meaning = "[slow GPUs and nodes](#stragglers); turns on `simulation.full_ranks`"},
    {.pointer = "/comment",
     .kind = SettingKind::object,
     .type = "any",
     .fallback = "",
     .meaning = "ignored"},

    // simulation
    row({.pointer = "/simulation/backend",
         .kind = SettingKind::choice,
         .type = "string",
         .fallback = "`flow`",
         .meaning = "`flow`: flows share links by max-min fairness on the real topology; "
                    "`analytical`: each transfer timed alone, no contention",
         .flag = "--backend B",
         .help = "flow or analytical",
         .choices = "flow|analytical"},
        {[](const JsonValue& v, SettingTarget& t) {
           t.scenario.simulation.backend =
               v.as_string() == "flow" ? models::Backend::flow : models::Backend::analytical;
         },
         [](const Scenario& s) -> json {
           return std::string(models::to_string(s.simulation.backend));
         }}),
    row({.pointer = "/simulation/full_ranks",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`false`",
         .meaning = "simulate every GPU instead of one rank per pipeline stage (exact, slower; "
                    "by default symmetric groups are launched together so that they still share "
                    "the fabric)"},
        boolean_field([](auto& s) { return &s.simulation.full_ranks; })),
    row({.pointer = "/simulation/pp_all_instances",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`false`",
         .meaning = "simulate the pipeline sends of every pipeline, not only one pipeline's"},
        boolean_field([](auto& s) { return &s.simulation.pp_all_instances; })),
    row({.pointer = "/simulation/collnet",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`false`",
         .meaning = "let NCCL use InfiniBand SHARP like `NCCL_COLLNET_ENABLE=1` (CollNet "
                    "Direct/Chain, and NVLS + SHARP across NVLink domains), off by default as in "
                    "NCCL; an error on a fabric without in-network reduction "
                    "(`system.fabric.collnet`)",
         .flag = "--collnet",
         .help = "Let NCCL use IB SHARP (CollNet, NCCL_COLLNET_ENABLE=1) where the fabric has "
                 "it"},
        {[](const JsonValue& v, SettingTarget& t) {
           Scenario& sc = t.scenario;
           sc.simulation.collnet = v.as_bool();
           if (sc.simulation.collnet && !(sc.cluster.scale_out && sc.cluster.scale_out->collnet)) {
             v.fail_message(
                 "this system's fabric has no in-network reduction (SHARP); see "
                 "system.fabric.collnet");
           }
         },
         echo_of([](auto& s) { return &s.simulation.collnet; })}),
    row({.pointer = "/simulation/ignore_memory",
         .kind = SettingKind::boolean,
         .type = "boolean",
         .fallback = "`false`",
         .meaning = "simulate plans that do not fit in GPU memory",
         .flag = "--ignore-memory",
         .help = "Simulate plans that do not fit in HBM"},
        boolean_field([](auto& s) { return &s.ignore_memory; })),
};

}  // namespace

std::vector<std::string> Setting::choice_list() const {
  std::vector<std::string> out;
  for (std::string_view rest = choices; !rest.empty();) {
    const size_t bar = rest.find('|');
    out.emplace_back(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
  }
  return out;
}

std::span<const Setting> scenario_settings() {
  return kSettings;
}

void read_settings(std::string_view section, sim::ObjectReader& object, SettingTarget& target) {
  for (const Setting& s : kSettings) {
    if (s.read == nullptr || s.section() != section) continue;
    std::optional<JsonValue> value;
    if (s.required) {
      value = object.required(s.key());
    } else {
      value = object.optional(s.key());
    }
    if (!value) continue;
    if (s.kind == SettingKind::choice) value->as_enum(s.choice_list());
    s.read(*value, target);
  }
}

json echo_settings(const Scenario& scenario) {
  json doc = json::object();
  for (const Setting& s : kSettings) {
    if (s.echo == nullptr) continue;
    json value = s.echo(scenario);
    if (!value.is_null()) doc[json::json_pointer(std::string(s.pointer))] = std::move(value);
  }
  return doc;
}

std::string exact_bandwidth(double bytes_per_s) {
  return fmt::format("{} B/s", bytes_per_s);  // the shortest text that reads back exactly
}

}  // namespace fabricsim::api
