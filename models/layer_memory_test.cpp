// Layers recomputed fully (recompute_layers) and activations offloaded to host memory
// (offload_layers): what each does to a chunk's activations and to its passes, in closed form.
#include <catch2/catch.hpp>
#include <string_view>

#include "models/compute_model.hpp"
#include "models/memory_model.hpp"
#include "models/model_presets.hpp"
#include "models/workload.hpp"
#include "tests/model_cases.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

namespace {

/// Llama 2 7B (32 layers) in four pipeline stages of eight layers, BF16: the middle stages hold
/// layers only, so their passes are eight identical layers.
Workload build(const topologies::GpuSpec& gpu, Recompute recompute, int recompute_layers,
               int offload_layers) {
  TransformerConfig model = *find_model("llama2-7b");
  ParallelPlan plan;
  plan.pp = 4;
  plan.recompute = recompute;
  plan.recompute_layers = recompute_layers;
  plan.offload_layers = offload_layers;
  TrainingConfig training;
  training.global_batch = 8;
  validate_plan(plan, training, model, plan.gpus(), "test", "/parallelism");
  return build_workload(model, plan, training, gpu, default_compute_profile(gpu));
}

/// The chunk of stage 1 (copied: the workloads are temporaries).
ChunkWork middle(const Workload& w) {
  return w.stages[1].chunks[0];
}

int count(const PassProgram& p, std::string_view name) {
  int n = 0;
  for (const WorkOp& op : p.ops)
    n += op.kind == WorkOp::Kind::compute && name == op.name ? 1 : 0;
  return n;
}

double seconds_of(const PassProgram& p, std::string_view name) {
  double s = 0;
  for (const WorkOp& op : p.ops)
    if (op.kind == WorkOp::Kind::compute && name == op.name) s += op.duration.s();
  return s;
}

}  // namespace

TEST_CASE("recomputing every layer of a chunk is full recomputation", "[workload][memory]") {
  const auto& gpu = testing::h100();
  const Workload full = build(gpu, Recompute::full, 0, 0);
  const Workload layers = build(gpu, Recompute::selective, 8, 0);
  for (size_t s = 0; s < full.stages.size(); ++s) {
    const ChunkWork& a = full.stages[s].chunks[0];
    const ChunkWork& b = layers.stages[s].chunks[0];
    CHECK(a.activation_bytes == b.activation_bytes);
    CHECK(a.forward.compute.s() == b.forward.compute.s());
    CHECK(a.backward.compute.s() == b.backward.compute.s());
    REQUIRE(a.backward.ops.size() == b.backward.ops.size());
    for (size_t i = 0; i < a.backward.ops.size(); ++i)
      CHECK(std::string_view(a.backward.ops[i].name) == b.backward.ops[i].name);
  }
}

TEST_CASE("recompute_layers: those layers keep their input only and rerun their forward",
          "[workload][memory]") {
  const auto& gpu = testing::h100();
  const ChunkWork none = middle(build(gpu, Recompute::selective, 0, 0));
  const ChunkWork all = middle(build(gpu, Recompute::selective, 8, 0));
  const ChunkWork three = middle(build(gpu, Recompute::selective, 3, 0));
  const double stored = none.activation_bytes / 8, input = all.activation_bytes / 8;
  CHECK(input < stored);
  CHECK(three.activation_bytes == Approx(5 * stored + 3 * input).epsilon(1e-12));
  // Each recomputed layer's forward reappears in the backward pass.
  CHECK(count(none.backward, "qkv") == 0);
  CHECK(count(three.backward, "qkv") == 3);
  const double layer_forward = none.forward.compute.s() / 8;
  CHECK(three.backward.compute.s() ==
        Approx(none.backward.compute.s() + 3 * layer_forward).epsilon(1e-9));
  CHECK(three.forward.compute.s() == none.forward.compute.s());
}

TEST_CASE("offload_layers: activations leave HBM, the copies costing only what compute cannot hide",
          "[workload][memory]") {
  topologies::GpuSpec gpu = testing::h100();
  const ChunkWork base = middle(build(gpu, Recompute::selective, 0, 0));
  const double layer = base.activation_bytes / 8;
  const double layer_forward = base.forward.compute.s() / 8;
  const double layer_backward = base.backward.compute.s() / 8;

  SECTION("HBM holds the layers kept plus one in transit; never the chunk's last layer") {
    const ChunkWork three = middle(build(gpu, Recompute::selective, 0, 3));
    CHECK(three.activation_bytes == Approx(5 * layer + layer).epsilon(1e-12));
    const ChunkWork all = middle(build(gpu, Recompute::selective, 0, 8));
    CHECK(all.activation_bytes == Approx(1 * layer + layer).epsilon(1e-12));
    // Offloaded layers follow the recomputed ones.
    const ChunkWork mixed = middle(build(gpu, Recompute::selective, 2, 3));
    const double input = middle(build(gpu, Recompute::selective, 8, 0)).activation_bytes / 8;
    CHECK(mixed.activation_bytes == Approx(2 * input + 3 * layer + layer).epsilon(1e-12));
  }
  SECTION("a fast link hides the copies entirely") {
    gpu.host_link = {1e6, 1e6};
    const ChunkWork off = middle(build(gpu, Recompute::selective, 0, 3));
    CHECK(count(off.forward, "offload_wait") == 0);
    CHECK(count(off.backward, "reload_wait") == 0);
    CHECK(off.forward.compute.s() == base.forward.compute.s());
    CHECK(off.backward.compute.s() == base.backward.compute.s());
  }
  SECTION("a copy just longer than its layer's compute waits for the difference") {
    const double copy = 1.5 * layer_forward;
    gpu.host_link = {layer / copy / 1e9, layer / copy / 1e9};
    const ChunkWork off = middle(build(gpu, Recompute::selective, 0, 3));
    CHECK(count(off.forward, "offload_wait") == 3);
    CHECK(seconds_of(off.forward, "offload_wait") ==
          Approx(3 * (copy - layer_forward)).epsilon(1e-9));
  }
  SECTION("the copy out runs at the to-host rate, the copy back at the from-host rate") {
    const double out = 1.5 * layer_forward, back = 1.5 * layer_backward;
    gpu.host_link = {layer / out / 1e9, layer / back / 1e9};
    const ChunkWork off = middle(build(gpu, Recompute::selective, 0, 3));
    CHECK(seconds_of(off.forward, "offload_wait") ==
          Approx(3 * (out - layer_forward)).epsilon(1e-9));
    CHECK(seconds_of(off.backward, "reload_wait") ==
          Approx(3 * (back - layer_backward)).epsilon(1e-9));
  }
  SECTION("a slow link: each copy waits for its excess over one layer's compute") {
    gpu.host_link = {1, 1};
    const double copy = layer / 1e9;
    REQUIRE(copy > layer_forward);
    const ChunkWork off = middle(build(gpu, Recompute::selective, 0, 3));
    CHECK(count(off.forward, "offload_wait") == 3);
    CHECK(count(off.backward, "reload_wait") == 3);
    CHECK(seconds_of(off.forward, "offload_wait") ==
          Approx(3 * (copy - layer_forward)).epsilon(1e-9));
    CHECK(seconds_of(off.backward, "reload_wait") ==
          Approx(3 * (copy - layer_backward)).epsilon(1e-9));
  }
}

TEST_CASE("every catalog GPU states its host link", "[workload][memory]") {
  for (const topologies::GpuSpec& g : topologies::gpu_catalog()) {
    INFO(g.id);
    CHECK(g.host_link.to_host_gb_per_s > 0);
    CHECK(g.host_link.from_host_gb_per_s > 0);
    // A copy reaches less than its link: PCIe Gen4/5/6 x16 at 32/64/128 GB/s a direction, a
    // Grace (Vera) NVLink-C2C of 900 GB/s (1.8 TB/s) bidirectional shared by two GPUs.
    const double link = g.id.starts_with("A100")             ? 32
                        : g.id == "B300"                     ? 128
                        : g.id == "GB200" || g.id == "GB300" ? 225
                        : g.id == "Rubin"                    ? 450
                                                             : 64;
    CHECK(g.host_link.to_host_gb_per_s < link);
    CHECK(g.host_link.from_host_gb_per_s < link);
  }
  // Measured (Azure's nvbandwidth runs): a GPU's copy to Grace over NVLink-C2C runs 3.7 times a
  // copy over PCIe Gen5.
  CHECK(topologies::find_gpu("GB200")->host_link.to_host_gb_per_s /
            topologies::find_gpu("H100-SXM5")->host_link.to_host_gb_per_s ==
        Approx(3.7).epsilon(0.01));
}

TEST_CASE("memory under other recomputed and offloaded counts needs no second lowering",
          "[workload][memory]") {
  // memory_report of a workload under a plan that differs only in recompute_layers and
  // offload_layers equals that of the workload lowered for that plan, stage by stage.
  TransformerConfig model = *find_model("llama2-7b");
  TrainingConfig training;
  training.global_batch = 16;
  for (const int vp : {1, 2}) {
    for (const Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
      ParallelPlan base;
      base.pp = 4;
      base.vp = vp;
      base.recompute = mode;
      const auto& gpu = testing::h100();
      const Workload lowered =
          build_workload(model, base, training, gpu, default_compute_profile(gpu));
      for (const int r : {0, 1, 3, 8}) {
        for (const int o : {0, 2, 7}) {
          INFO("vp " << vp << " mode " << to_string(mode) << " recompute " << r << " offload "
                     << o);
          ParallelPlan p = base;
          p.recompute_layers = r;
          p.offload_layers = o;
          const Workload direct =
              build_workload(model, p, training, gpu, default_compute_profile(gpu));
          const MemoryReport a = memory_report(lowered, p, training, gpu);
          const MemoryReport b = memory_report(direct, p, training, gpu);
          REQUIRE(a.stages.size() == b.stages.size());
          for (size_t s = 0; s < a.stages.size(); ++s)
            CHECK(a.stages[s].activations == b.stages[s].activations);
          CHECK(a.fits == b.fits);
        }
      }
    }
  }
}
