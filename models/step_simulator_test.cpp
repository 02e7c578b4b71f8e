#include "models/step_simulator.hpp"

#include <catch2/catch.hpp>
#include <optional>

#include "models/group_layout.hpp"
#include "models/model_presets.hpp"
#include "models/moe_alltoall.hpp"
#include "models/pipeline_schedule.hpp"

using namespace fabricsim;
using namespace fabricsim::models;

namespace {

struct Setup {
  std::string system = "dgx-h100";
  int gpus = 8;
  std::optional<topologies::ClusterSpec> cluster;  ///< overrides the preset's spec
  TransformerConfig model;
  ParallelPlan plan;
  TrainingConfig training;
  SoftwareStack software = default_software();
};

/// llama2-7b cut to `layers` layers (the step's structure, at a fraction of the events).
Setup llama(int layers, int tp, int pp, int dp, int global_batch) {
  Setup s;
  s.model = *find_model("llama2-7b");
  s.model.layers = layers;
  s.plan.tp = tp;
  s.plan.pp = pp;
  s.plan.dp = dp;
  s.gpus = s.plan.gpus();
  s.training.global_batch = global_batch;
  return s;
}

Workload workload_of(const Setup& s) {
  const topologies::GpuSpec& gpu = *topologies::find_gpu(topologies::find_system(s.system)->gpu);
  validate_plan(s.plan, s.training, s.model, s.gpus, "test", "/parallelism");
  LoweringOptions options;
  options.software = s.software;
  return build_workload(s.model, s.plan, s.training, gpu, default_compute_profile(gpu), options);
}

StepResult simulate(const Setup& s, const StepOptions& options) {
  const topologies::SystemPreset& preset = *topologies::find_system(s.system);
  const topologies::GpuSpec& gpu = *topologies::find_gpu(preset.gpu);
  const System system = make_system(s.cluster ? *s.cluster : preset.make(s.gpus), gpu, preset.cpu);
  return simulate_step(system, default_collective_profile(gpu), workload_of(s), s.plan, options);
}

StepOptions with_backend(Backend b) {
  StepOptions o;
  o.backend = b;
  return o;
}

StepOptions full_ranks() {
  StepOptions o;
  o.full_ranks = true;
  return o;
}

void check_same_breakdowns(const StepResult& a, const StepResult& b) {
  REQUIRE(a.stages.size() == b.stages.size());
  for (size_t s = 0; s < a.stages.size(); ++s) {
    INFO("stage " << s);
    const StageBreakdown& x = a.stages[s];
    const StageBreakdown& y = b.stages[s];
    CHECK(x.compute == y.compute);
    CHECK(x.exposed_tp.s() == y.exposed_tp.s());
    CHECK(x.exposed_pp.s() == y.exposed_pp.s());
    CHECK(x.bubble.s() == y.bubble.s());
    CHECK(x.exposed_dp.s() == y.exposed_dp.s());
    CHECK(x.optimizer == y.optimizer);
    CHECK(x.end == y.end);
  }
}

/// Full-rank breakdowns are averages over a stage's ranks: equal to rounding.
void check_close_breakdowns(const StepResult& a, const StepResult& b) {
  REQUIRE(a.stages.size() == b.stages.size());
  for (size_t s = 0; s < a.stages.size(); ++s) {
    INFO("stage " << s);
    const StageBreakdown& x = a.stages[s];
    const StageBreakdown& y = b.stages[s];
    CHECK(x.compute.s() == Approx(y.compute.s()).epsilon(1e-12));
    CHECK(x.exposed_tp.s() == Approx(y.exposed_tp.s()).epsilon(1e-12));
    CHECK(x.exposed_pp.s() == Approx(y.exposed_pp.s()).epsilon(1e-12));
    CHECK(x.bubble.s() == Approx(y.bubble.s()).epsilon(1e-12));
    CHECK(x.exposed_dp.s() == Approx(y.exposed_dp.s()).epsilon(1e-12));
    CHECK(x.optimizer.s() == Approx(y.optimizer.s()).epsilon(1e-12));
    CHECK(x.end == y.end);
  }
}

}  // namespace

TEST_CASE("flow and analytical steps agree where nothing contends", "[step][equivalence]") {
  SECTION("TP8 inside one NVSwitch domain") {
    const Setup s = llama(4, 8, 1, 1, 2);
    const StepResult flow = simulate(s, with_backend(Backend::flow));
    const StepResult analytical = simulate(s, with_backend(Backend::analytical));
    REQUIRE(flow.flows > 0);
    CHECK(flow.step_time.s() == analytical.step_time.s());
    check_same_breakdowns(flow, analytical);
  }
  SECTION("TP8 x PP2: one pipeline whose sends cross the network on their own NIC") {
    const Setup s = llama(4, 8, 2, 1, 4);
    const StepResult flow = simulate(s, with_backend(Backend::flow));
    const StepResult analytical = simulate(s, with_backend(Backend::analytical));
    CHECK(flow.step_time.s() == analytical.step_time.s());
    check_same_breakdowns(flow, analytical);
  }
}

TEST_CASE("one rank per stage reproduces the full-rank simulation", "[step][equivalence]") {
  SECTION("TP8 x DP2 over two nodes") {
    Setup s = llama(4, 8, 1, 2, 4);
    const StepResult reduced = simulate(s, StepOptions{});
    const StepResult full = simulate(s, full_ranks());
    CHECK(reduced.simulated_ranks == 1);
    CHECK(full.simulated_ranks == 16);
    // Data-parallel groups {i, 8 + i} each cross the network on rail i: the reduced run launches
    // all eight instances, the full run launches each when its two members arrive, at the same
    // instants. Nothing differs, so the results are identical, not merely close.
    REQUIRE(reduced.stages[0].exposed_dp.s() > 0);
    CHECK(reduced.step_time.s() == full.step_time.s());
    check_close_breakdowns(reduced, full);
  }
  SECTION("TP8 x PP2 x DP2 over four nodes") {
    Setup s = llama(4, 8, 2, 2, 8);
    const StepResult reduced = simulate(s, StepOptions{});
    StepOptions all;
    all.pp_all_instances = true;
    const StepResult reduced_all = simulate(s, all);
    const StepResult full = simulate(s, full_ranks());
    CHECK(reduced.simulated_ranks == 2);
    CHECK(full.simulated_ranks == 32);
    // Without pp_all_instances only pipeline 0's sends (rank i to 16 + i, on rail i) are on the
    // fabric; the other seven pipelines' sends would use rails 1..7 alongside those stages'
    // data-parallel traffic, but they never overlap it in time here, so even then the results
    // are identical.
    CHECK(reduced.step_time.s() == full.step_time.s());
    CHECK(reduced_all.step_time.s() == full.step_time.s());
    check_close_breakdowns(reduced, full);
    check_close_breakdowns(reduced_all, full);
  }
}

TEST_CASE("1F1B bubbles: (pp - 1) / (m + pp - 1) of the step, 1/vp of it interleaved",
          "[step][pipeline]") {
  // Compute only (TP1, DP1: no collectives) on four GPUs of one node, 8 layers per stage and a
  // tiny vocabulary, so that the embedding and LM head stages are as heavy as the others. With
  // uniform stages of c = t_fwd + t_bwd per micro-batch, stage 0 idles (pp - 1) c of the
  // (m + pp - 1) c it takes (the optimizer step comes after). The 1F1B dependency cycle also
  // carries the activation and gradient sends (32 MiB over NVLink, ~0.1 ms each against c ~ 75
  // ms), and the last stage is 0.2% slower (final norm, head, loss): the simulated fraction is
  // 0.5% above the closed form, hence the 1% tolerance. Interleaving sends twice as often
  // (each of half the compute), so its ratio gets 3%.
  Setup s = llama(32, 1, 4, 1, 8);
  s.model.vocab = 256;
  const double pp = 4, m = 8, vp = 2;
  const auto idle_fraction = [](const StepResult& r) {
    const StageBreakdown& first = r.stages[0];
    return (first.bubble.s() + first.exposed_pp.s()) / (r.step_time.s() - first.optimizer.s());
  };
  const StepResult plain = simulate(s, StepOptions{});
  CHECK(idle_fraction(plain) == Approx((pp - 1) / (m + pp - 1)).epsilon(0.01));
  const Workload w = workload_of(s);
  for (int st = 0; st < pp; ++st) {
    INFO("stage " << st);
    const StageBreakdown& b = plain.stages[static_cast<size_t>(st)];
    // No data parallelism and no collectives: the stage's time is compute, pipeline waits and
    // the optimizer step, nothing else.
    CHECK(b.exposed_dp.s() == 0);
    CHECK(b.exposed_tp.s() == 0);
    CHECK(b.compute.s() + b.bubble.s() + b.exposed_pp.s() + b.optimizer.s() ==
          Approx(b.end.s()).epsilon(1e-12));
    // Stage s first waits for the pipeline to fill: s forwards upstream (and their sends).
    const double t_fwd = w.stages[static_cast<size_t>(st)].chunks[0].forward.compute.s();
    if (st > 0) CHECK(b.bubble.s() + b.exposed_pp.s() >= st * t_fwd);
  }
  // The waits split into the neighbour's compute (bubble) and the bytes in flight (pipeline
  // sends, 32 MiB over NVLink: a small but nonzero part).
  for (int st = 1; st < pp; ++st) {
    const StageBreakdown& b = plain.stages[static_cast<size_t>(st)];
    CHECK(b.exposed_pp.s() > 0);
    CHECK(b.exposed_pp.s() < 0.02 * (b.bubble.s() + b.exposed_pp.s()));
  }
  // The last stage waits only for the fill: 3 forwards, plus 0.5% for the sends.
  const StageBreakdown& last = plain.stages[3];
  CHECK(last.bubble.s() + last.exposed_pp.s() ==
        Approx(3 * w.stages[3].chunks[0].forward.compute.s()).epsilon(0.01));

  s.plan.vp = 2;
  const StepResult interleaved = simulate(s, StepOptions{});
  // Megatron: the bubble shrinks to (pp - 1) c / vp.
  CHECK(idle_fraction(interleaved) == Approx((pp - 1) / (vp * m + pp - 1)).epsilon(0.03));
  const double idle = plain.stages[0].bubble.s() + plain.stages[0].exposed_pp.s();
  const double idle_interleaved =
      interleaved.stages[0].bubble.s() + interleaved.stages[0].exposed_pp.s();
  CHECK(idle_interleaved / idle == Approx(1 / vp).epsilon(0.03));
  CHECK(interleaved.step_time.s() < plain.step_time.s());
}

TEST_CASE("an oversubscribed fabric slows data-parallel traffic", "[step][contention]") {
  // TP8 x DP4 over four servers, two per ToR leaf (not rail-optimized): every DP ring crosses
  // between the two leaves. Non-blocking leaves have 16 uplinks for 16 NICs; 4:1 leaves 4.
  Setup s = llama(4, 8, 1, 4, 4);
  s.plan.zero = 0;
  s.plan.dp_comm_overlap = false;
  topologies::ClusterSpec spec = topologies::find_system("dgx-h100")->make(32);
  spec.scale_out->rail_optimized = false;
  spec.scale_out->leaf_down_ports = 16;
  spec.scale_out->leaf_up_ports = 16;
  s.cluster = spec;
  const StepResult nonblocking = simulate(s, StepOptions{});
  const StepResult nonblocking_a = simulate(s, with_backend(Backend::analytical));
  spec.scale_out->leaf_up_ports = 4;
  s.cluster = spec;
  const StepResult oversubscribed = simulate(s, StepOptions{});
  const StepResult oversubscribed_a = simulate(s, with_backend(Backend::analytical));
  CHECK(oversubscribed.step_time.s() > nonblocking.step_time.s());
  CHECK(oversubscribed.stages[0].exposed_dp.s() > nonblocking.stages[0].exposed_dp.s());
  CHECK(nonblocking_a.step_time.s() <= nonblocking.step_time.s());
  CHECK(oversubscribed_a.step_time.s() <= oversubscribed.step_time.s());
  // The analytical backend gives every flow its uncontended rate: leaf uplinks run at the NIC
  // rate, so it cannot tell the two fabrics apart.
  CHECK(oversubscribed_a.step_time.s() == nonblocking_a.step_time.s());
}

TEST_CASE("a step simulated twice is bit-identical", "[step][determinism]") {
  Setup s = llama(4, 8, 2, 2, 8);
  const StepResult a = simulate(s, StepOptions{});
  const StepResult b = simulate(s, StepOptions{});
  CHECK(a.step_time.s() == b.step_time.s());
  CHECK(a.events == b.events);
  CHECK(a.flows == b.flows);
  CHECK(a.rate_solves == b.rate_solves);
  check_same_breakdowns(a, b);
  // Full-rank runs too (more simultaneous events, barriers per group).
  const StepResult fa = simulate(s, full_ranks());
  const StepResult fb = simulate(s, full_ranks());
  CHECK(fa.step_time.s() == fb.step_time.s());
  CHECK(fa.events == fb.events);
  check_same_breakdowns(fa, fb);
  REQUIRE(a.busiest_links.size() == b.busiest_links.size());
  for (size_t i = 0; i < a.busiest_links.size(); ++i) {
    CHECK(a.busiest_links[i].name == b.busiest_links[i].name);
    CHECK(a.busiest_links[i].bytes == b.busiest_links[i].bytes);
  }
}

namespace {

/// mixtral-8x7b cut to `layers` layers at sequence 4096: MoE with 8 experts, top-2.
Setup mixtral(int layers, int tp, int dp, int ep, int global_batch) {
  Setup s;
  s.model = *find_model("mixtral-8x7b");
  s.model.layers = layers;
  s.model.seq_len = 4096;
  s.plan.tp = tp;
  s.plan.dp = dp;
  s.plan.ep = ep;
  s.gpus = s.plan.gpus();
  s.training.global_batch = global_batch;
  return s;
}

/// Runs `s` on the analytical backend with a cache the check can price collectives with, then
/// `check(workload, cache, result)`.
template <class Check>
void with_analytical_step(const Setup& s, Check check) {
  const topologies::SystemPreset& preset = *topologies::find_system(s.system);
  const topologies::GpuSpec& gpu = *topologies::find_gpu(preset.gpu);
  const System system = make_system(preset.make(s.gpus), gpu, preset.cpu);
  const CollectiveProfile profile = default_collective_profile(gpu);
  const Workload w = workload_of(s);
  const StepOptions options = with_backend(Backend::analytical);
  StepCache cache(system, profile, options.routing, options.collnet);
  const StepResult r = simulate_step(system, profile, w, s.plan, options, &cache);
  check(w, cache, r);
}

struct GridCase {
  const char* name;
  Setup setup;
  /// Interleaved pipelines send in the same direction at once (an activation of one chunk and
  /// a gradient of another): those sends share a link on the flow backend.
  bool sends_contend = false;
};

/// Plans covering DP, CP, EP (MoE, blocking and overlapped), ZeRO-3 and interleaved PP on one
/// GB200 NVL72 domain, chosen
/// so that nothing contends: every group sits inside one NVLink domain (no two groups share a
/// link), data-parallel traffic without overlap runs while the compute stream is idle, ZeRO-3's
/// gathers run without TP (the only other traffic of the step would share the GPU's NVLink
/// ports), EP pairs exchange over one pair of directed links, and pipeline sends run without TP.
std::vector<GridCase> uncontended_grid() {
  std::vector<GridCase> grid;
  auto add = [&](const char* name, Setup s) {
    s.system = "gb200-nvl72";
    s.gpus = s.plan.gpus();
    s.plan.dp_comm_overlap = false;
    s.plan.param_gather_overlap = false;
    const bool interleaved = s.plan.vp > 1;
    grid.push_back({name, std::move(s), interleaved});
  };
  add("TP2 DP4", llama(4, 2, 1, 4, 8));
  Setup cp = llama(4, 2, 1, 2, 4);
  cp.plan.cp = 2;
  add("TP2 CP2 DP2", cp);
  add("MoE TP1 DP4 EP2", mixtral(2, 1, 4, 2, 8));
  Setup overlapped = mixtral(2, 1, 4, 2, 8);
  overlapped.software.moe_a2a_overlap = true;
  overlapped.software.fused_moe_mlp = true;
  overlapped.software.grouped_gemm = GroupedGemmKernel::fused;
  add("MoE EP2, all-to-alls overlapped, fused MLP", overlapped);
  Setup chained = mixtral(2, 1, 4, 2, 8);
  chained.software.moe_a2a_overlap = true;
  chained.software.moe_a2a_overlap_scope = A2aOverlapScope::chunk;
  add("MoE EP2, all-to-alls chained beside the chunk (DualPipe)", chained);
  Setup zero3 = llama(4, 1, 1, 4, 8);
  zero3.plan.zero = 3;
  add("TP1 DP4 ZeRO-3", zero3);
  Setup pipelined = llama(8, 1, 2, 2, 8);
  pipelined.plan.vp = 2;
  add("TP1 PP2 VP2 DP2", pipelined);
  // Banded layers (every other one full) with FP8 attention in an FP8 run.
  Setup banded = llama(4, 2, 1, 4, 8);
  banded.model.sliding_window = 512;
  banded.model.full_attention_every = 2;
  banded.training.precision = topologies::Precision::fp8;
  banded.software.fp8_attention = true;
  add("TP2 DP4, sliding window, FP8 attention", banded);
  return grid;
}

}  // namespace

TEST_CASE("plans evaluated on one cache get the steps of a fresh cache", "[step][cache]") {
  // A planner evaluates many plans on one cluster, sharing routes, schedules and, per
  // placement, rank groups and collective times. Plans that share a placement (here the same
  // tp/dp with other batches) and plans that do not, in an order that revisits each, on 16
  // H100 in two nodes so that groups differ in the links they cross.
  std::vector<Setup> plans = {llama(4, 2, 1, 8, 16), llama(4, 8, 1, 2, 4), llama(4, 2, 1, 8, 32),
                              llama(4, 4, 2, 2, 8), llama(4, 1, 1, 16, 32)};
  Setup reordered = llama(4, 2, 1, 8, 16);
  reordered.plan.order = {ParallelDim::dp, ParallelDim::tp, ParallelDim::cp, ParallelDim::pp};
  plans.push_back(reordered);
  const topologies::SystemPreset& preset = *topologies::find_system("dgx-h100");
  const topologies::GpuSpec& gpu = *topologies::find_gpu(preset.gpu);
  const System system = make_system(preset.make(16), gpu, preset.cpu);
  const CollectiveProfile profile = default_collective_profile(gpu);
  const StepOptions options = with_backend(Backend::analytical);
  StepCache shared(system, profile, options.routing, options.collnet);
  for (int round = 0; round < 2; ++round) {
    for (const Setup& s : plans) {
      INFO("round " << round << ", tp " << s.plan.tp << " pp " << s.plan.pp << " dp " << s.plan.dp
                    << ", global batch " << s.training.global_batch);
      REQUIRE(s.gpus == 16);
      const Workload w = workload_of(s);
      StepCache fresh(system, profile, options.routing, options.collnet);
      const StepResult alone = simulate_step(system, profile, w, s.plan, options, &fresh);
      const StepResult reused = simulate_step(system, profile, w, s.plan, options, &shared);
      CHECK(reused.step_time.s() == alone.step_time.s());
      check_same_breakdowns(reused, alone);
    }
  }
}

TEST_CASE("flow and analytical steps agree where nothing contends, over a plan grid",
          "[step][equivalence]") {
  for (const GridCase& c : uncontended_grid()) {
    INFO(c.name);
    const StepResult flow = simulate(c.setup, with_backend(Backend::flow));
    const StepResult analytical = simulate(c.setup, with_backend(Backend::analytical));
    REQUIRE(flow.flows > 0);
    if (c.sends_contend) {
      // Sharing only slows the sends, by little: the compute is the same.
      CHECK(flow.step_time.s() >= analytical.step_time.s());
      CHECK(flow.step_time.s() <= 1.001 * analytical.step_time.s());
      for (size_t st = 0; st < flow.stages.size(); ++st)
        CHECK(flow.stages[st].compute.s() == analytical.stages[st].compute.s());
      continue;
    }
    CHECK(flow.step_time.s() == analytical.step_time.s());
    CHECK(flow.critical_stage == analytical.critical_stage);
    check_same_breakdowns(flow, analytical);
  }
}

/// A stage's compute stream is always doing or waiting for something it books: its parts add
/// up to its end.
void check_parts_add_up(const StepResult& r) {
  for (size_t st = 0; st < r.stages.size(); ++st) {
    INFO("stage " << st);
    const StageBreakdown& b = r.stages[st];
    sim::Seconds parts;
    for (const BreakdownComponent& c : kBreakdownComponents)
      parts += b.*c.field;
    CHECK(parts.s() == Approx(b.end.s()).epsilon(1e-9));
  }
}

TEST_CASE("data-parallel traffic that overlaps compute: backends agree and parts add up",
          "[step][equivalence]") {
  // The grid's plans with gradient reductions overlapping the last backward of each chunk and
  // ZeRO-1 parameter gathers overlapping the first forward (the gated passes). Without TP the
  // data-parallel flows run alone on the fabric (each rank's stream is serial), so the flow
  // backend's times are the analytical ones; the analytical backend memoizes the gated first
  // forward's cost less its waits, and its reductions launch ahead of the clock.
  for (GridCase c : uncontended_grid()) {
    if (c.setup.plan.tp > 1 || c.setup.plan.ep > 1 || c.setup.plan.zero >= 3) continue;
    INFO(c.name);
    c.setup.plan.dp_comm_overlap = true;
    c.setup.plan.param_gather_overlap = true;
    c.setup.plan.zero = 1;
    const StepResult flow = simulate(c.setup, with_backend(Backend::flow));
    const StepResult analytical = simulate(c.setup, with_backend(Backend::analytical));
    check_parts_add_up(flow);
    check_parts_add_up(analytical);
    REQUIRE(analytical.stages[0].exposed_dp.s() > 0);  // the first forward waits for its gather
    if (c.sends_contend) {
      // The interleaved sends share their links with each other and now with the overlapped
      // reductions: a little slower on the flow backend (0.15% here).
      CHECK(flow.step_time.s() >= analytical.step_time.s());
      CHECK(flow.step_time.s() <= 1.005 * analytical.step_time.s());
      continue;
    }
    CHECK(flow.step_time.s() == analytical.step_time.s());
    check_same_breakdowns(flow, analytical);
  }
}

TEST_CASE("every stage's parts add up to its end, over the plan grid", "[step]") {
  for (const GridCase& c : uncontended_grid()) {
    INFO(c.name);
    check_parts_add_up(simulate(c.setup, with_backend(Backend::flow)));
    check_parts_add_up(simulate(c.setup, with_backend(Backend::analytical)));
    check_parts_add_up(simulate(c.setup, full_ranks()));
  }
}

TEST_CASE("one rank per stage reproduces the full-rank simulation over a plan grid",
          "[step][equivalence]") {
  for (const GridCase& c : uncontended_grid()) {
    INFO(c.name);
    const StepResult reduced = simulate(c.setup, StepOptions{});
    const StepResult full = simulate(c.setup, full_ranks());
    CHECK(reduced.simulated_ranks == static_cast<size_t>(c.setup.plan.pp));
    CHECK(full.simulated_ranks == static_cast<size_t>(c.setup.gpus));
    CHECK(reduced.step_time.s() == full.step_time.s());
    check_close_breakdowns(reduced, full);
  }
}

TEST_CASE("a traced step, walked kernel by kernel, equals the untraced one",
          "[step][equivalence]") {
  // Untraced analytical passes step over each run of compute ops at once and replay memoized
  // pass costs; a trace needs every kernel, so it walks each op of every pass. Both must book
  // the same picoseconds, with and without data-parallel overlap.
  for (GridCase c : uncontended_grid()) {
    for (const bool overlap : {false, true}) {
      INFO(c.name << (overlap ? ", overlapped" : ""));
      c.setup.plan.dp_comm_overlap = overlap;
      c.setup.plan.param_gather_overlap = overlap;
      for (const Backend backend : {Backend::analytical, Backend::flow}) {
        StepOptions traced = with_backend(backend);
        traced.trace = true;
        const StepResult walked = simulate(c.setup, traced);
        const StepResult stepped = simulate(c.setup, with_backend(backend));
        REQUIRE_FALSE(walked.trace.empty());
        CHECK(walked.step_time.s() == stepped.step_time.s());
        check_same_breakdowns(walked, stepped);
      }
    }
  }
}

TEST_CASE("context-parallel time is booked as CP, tensor-parallel time as TP", "[step]") {
  // TP1 CP2: only CP collectives run inside passes; TP2 CP1: only TP ones.
  Setup cp = llama(4, 1, 1, 1, 2);
  cp.plan.cp = 2;
  cp.gpus = cp.plan.gpus();
  const StepResult with_cp = simulate(cp, with_backend(Backend::analytical));
  CHECK(with_cp.stages[0].exposed_cp.s() > 0);
  CHECK(with_cp.stages[0].exposed_tp.s() == 0);
  const StepResult with_tp = simulate(llama(4, 2, 1, 1, 2), with_backend(Backend::analytical));
  CHECK(with_tp.stages[0].exposed_tp.s() > 0);
  CHECK(with_tp.stages[0].exposed_cp.s() == 0);
}

TEST_CASE("expert gradients are reduced over the expert-data-parallel group", "[step][moe]") {
  // 16 GPUs over two DGX H100 servers, DP16 EP8: the dense gradients are all-reduced over all 16
  // ranks, the expert gradients over the 2 ranks holding the same experts ({r, r + 8}: one per
  // server). Without overlap or ZeRO the reductions run one after another once the backward
  // is done, so the exposed DP time is exactly the sum of their uncontended durations.
  Setup s = mixtral(2, 1, 16, 8, 16);
  s.plan.zero = 0;
  s.plan.dp_comm_overlap = false;
  with_analytical_step(s, [&](const Workload& w, StepCache& cache, const StepResult& r) {
    const Placement placement(s.plan, s.gpus);
    // One job on the whole cluster: its ranks are the topology's.
    const auto dp = sim::ids_of<topologies::GpuRank>(placement.group(GroupKind::dp, 0));
    const auto edp = sim::ids_of<topologies::GpuRank>(placement.group(GroupKind::edp, 0));
    REQUIRE(dp.size() == 16);
    REQUIRE(edp == sim::ids_of<topologies::GpuRank>({0, 8}));
    sim::Time expected;
    double expert_bytes = 0;
    for (const ChunkWork& chunk : w.stages[0].chunks) {
      for (const ChunkWork::Bucket& b : chunk.buckets) {
        if (b.dense > 0) {
          expected += cache.isolated_time(cache.collective(dp, CollectiveOp::all_reduce,
                                                           sim::Bytes::of(b.dense * w.grad_bytes)));
        }
        if (b.expert > 0) {
          expert_bytes += b.expert * w.grad_bytes;
          expected += cache.isolated_time(cache.collective(
              edp, CollectiveOp::all_reduce, sim::Bytes::of(b.expert * w.grad_bytes)));
        }
      }
    }
    REQUIRE(expert_bytes > 0);
    CHECK(r.stages[0].exposed_dp.s() == Approx(expected.s()).epsilon(1e-12));
  });
}

TEST_CASE("collectives beside a pass slow it by the share of it they cover", "[step]") {
  // DP16 over two DGX H100 servers, plain data parallelism with overlapped reductions: only the
  // last backward runs beside the gradient all-reduces. NCCL's blocks hold SMs while those run,
  // so that backward's kernels take longer by the data-parallel contention times the share of
  // it the all-reduces' uncontended time covers, at most all of it. The other passes run alone.
  // Short sequences make the reductions outlast the backward (the share stops at 1); 16 layers
  // of 4096 tokens outlast their reductions.
  for (const auto& shape : {std::pair{2, 256}, std::pair{16, 4096}}) {
    // Plain ints, not structured bindings: the lambda below captures them (clang 14).
    const int layers = shape.first, seq_len = shape.second;
    INFO(layers << " layers of " << seq_len << " tokens");
    Setup s = llama(layers, 1, 1, 16, 32);
    s.model.seq_len = seq_len;
    s.plan.zero = 0;
    with_analytical_step(s, [&](const Workload& w, StepCache& cache, const StepResult& r) {
      const Placement placement(s.plan, s.gpus);
      const auto dp = sim::ids_of<topologies::GpuRank>(placement.group(GroupKind::dp, 0));
      const ChunkWork& chunk = w.stages[0].chunks[0];
      sim::Time beside;
      for (const ChunkWork::Bucket& b : chunk.buckets) {
        beside += cache.isolated_time(
            cache.collective(dp, CollectiveOp::all_reduce, sim::Bytes::of(b.dense * w.grad_bytes)));
      }
      const double share = std::min(1.0, beside.s() / chunk.backward.compute.s());
      REQUIRE(w.dp_contention > 0);
      REQUIRE(w.microbatches == 2);
      const double alone = 2 * (chunk.forward.compute + chunk.backward.compute).s();
      CHECK(r.stages[0].compute.s() ==
            Approx(alone + w.dp_contention * share * chunk.backward.compute.s()).epsilon(1e-9));
      CHECK(share > 0);
      CHECK((share < 1) == (layers == 16));
      CHECK(beside.s() > chunk.backward.compute.s() * (layers == 16 ? 0 : 1));
    });
  }
}

TEST_CASE("context-parallel ranks reduce their gradients together", "[step]") {
  // DP1 CP2 on one server: the two CP ranks trained on halves of the same sequences, so their
  // dense gradients are all-reduced over both (the DP group is dp x cp ranks); without overlap
  // or ZeRO the exposed DP time is the sum of the buckets' uncontended all-reduces.
  Setup s = llama(2, 1, 1, 1, 2);
  s.plan.cp = 2;
  s.plan.zero = 0;
  s.plan.dp_comm_overlap = false;
  s.gpus = s.plan.gpus();
  with_analytical_step(s, [&](const Workload& w, StepCache& cache, const StepResult& r) {
    const Placement placement(s.plan, s.gpus);
    const auto dp = sim::ids_of<topologies::GpuRank>(placement.group(GroupKind::dp, 0));
    REQUIRE(dp == sim::ids_of<topologies::GpuRank>({0, 1}));
    sim::Time expected;
    for (const ChunkWork& chunk : w.stages[0].chunks) {
      for (const ChunkWork::Bucket& b : chunk.buckets) {
        expected += cache.isolated_time(
            cache.collective(dp, CollectiveOp::all_reduce, sim::Bytes::of(b.dense * w.grad_bytes)));
      }
    }
    REQUIRE(expected > sim::Time::zero());
    CHECK(r.stages[0].exposed_dp.s() == Approx(expected.s()).epsilon(1e-12));
  });
}

TEST_CASE("a per-rank compute slowdown stretches that rank's kernels", "[step][straggler]") {
  // TP8 x DP2 over two servers, every rank simulated. Slowing every rank by 1.5 stretches the
  // compute by 1.5 (to a picosecond per kernel); slowing one of the 16 ranks raises the stage's
  // average compute to (15 + 1.5) / 16 of it and makes the step longer, since its TP group and
  // the gradient reductions wait for the straggler, but no longer than all ranks slowed.
  const Setup s = llama(4, 8, 1, 2, 4);
  StepOptions base = full_ranks();
  base.backend = Backend::analytical;
  const StepResult plain = simulate(s, base);
  StepOptions all = base;
  all.compute_slowdown.assign(16, 1.5);
  const StepResult slow = simulate(s, all);
  CHECK(slow.stages[0].compute.s() == Approx(1.5 * plain.stages[0].compute.s()).epsilon(1e-8));
  StepOptions one = base;
  one.compute_slowdown.assign(16, 1.0);
  one.compute_slowdown[9] = 1.5;
  const StepResult straggler = simulate(s, one);
  CHECK(straggler.stages[0].compute.s() ==
        Approx((15 + 1.5) / 16 * plain.stages[0].compute.s()).epsilon(1e-9));
  CHECK(straggler.step_time.s() > plain.step_time.s());
  CHECK(straggler.step_time.s() < slow.step_time.s() + 1e-12);
}

TEST_CASE("DeepEP and Hybrid-EP take the MoE all-to-all model's time on both backends",
          "[step][moe]") {
  // mixtral cut to 2 layers, DP8 EP8 on one DGX H100: per MoE layer and micro-batch a forward
  // dispatch and combine and a backward pair, each blocking. Through a flex dispatcher the
  // exposed EP time is exactly the sum of models/moe_alltoall's times for the group (one NVLink
  // domain), with that dispatcher's kernel.
  Setup s = mixtral(2, 1, 8, 8, 8);
  const topologies::SystemPreset& preset = *topologies::find_system(s.system);
  const topologies::GpuSpec& gpu = *topologies::find_gpu(preset.gpu);
  const System system = make_system(preset.make(s.gpus), gpu, preset.cpu);
  const CollectiveProfile profile = default_collective_profile(gpu);
  validate_plan(s.plan, s.training, s.model, s.gpus, "test", "/parallelism");
  const GroupLayout layout = make_group_layout(*system.topology, first_ranks(8));
  std::vector<double> exposed;
  for (const MoeDispatcher dispatcher : {MoeDispatcher::deepep, MoeDispatcher::hybridep}) {
    INFO(to_string(dispatcher));
    LoweringOptions lowering;
    lowering.software.moe_dispatcher = dispatcher;
    const Workload w =
        build_workload(s.model, s.plan, s.training, gpu, default_compute_profile(gpu), lowering);
    int flex_ops = 0;
    for (const ChunkWork& c : w.stages[0].chunks) {
      for (const PassProgram* pass : {&c.forward, &c.backward}) {
        for (const WorkOp& op : pass->ops) {
          if (op.kind == WorkOp::Kind::comm && op.group == GroupKind::ep) {
            CHECK(op.moe.tokens > 0);
            CHECK(op.moe.hybridep == (dispatcher == MoeDispatcher::hybridep));
            ++flex_ops;
          }
        }
      }
    }
    CHECK(flex_ops == 4 * 2);  // dispatch + combine, forward and backward, 2 layers
    auto one = [&](bool combine) {
      MoeAlltoallRequest q;
      q.kernel =
          dispatcher == MoeDispatcher::hybridep ? MoeKernel::hybridep : MoeKernel::deepep_normal;
      q.direction = combine ? MoeDirection::combine : MoeDirection::dispatch;
      q.ranks = 8;
      q.ranks_per_node = 8;
      q.tokens_per_rank = s.model.seq_len;  // micro-batch 1, no TP
      q.hidden = s.model.hidden;
      q.top_k = s.model.moe->top_k;
      q.experts = s.model.moe->experts;
      return moe_alltoall(q, moe_link_rates(system, layout), moe_kernel_profile(profile)).seconds;
    };
    const double per_layer = 2 * (one(false) + one(true));
    const double microbatches = 1;  // global batch 8 over DP8
    const double expected = per_layer * 2 * microbatches;
    for (const Backend b : {Backend::analytical, Backend::flow}) {
      const StepResult r = simulate_step(system, profile, w, s.plan, with_backend(b));
      CHECK(r.stages[0].exposed_ep.s() == Approx(expected).epsilon(1e-6));
    }
    exposed.push_back(expected);
    // Without a flex dispatcher the same traffic is an NCCL all-to-all: another time.
    const StepResult nccl = simulate(s, with_backend(Backend::analytical));
    CHECK(nccl.stages[0].exposed_ep.s() != Approx(expected).epsilon(1e-3));
  }
  // Hybrid-EP's own rates and its fixed cost per call price it apart from DeepEP.
  CHECK(exposed[1] != Approx(exposed[0]).epsilon(1e-3));
}

TEST_CASE("all-to-alls overlapped over the chunk run one after another beside its compute",
          "[step][moe]") {
  // Two MoE layers, EP2 in one GB200 NVL72 domain: four all-to-alls per pass; data-parallel
  // traffic outside the passes, so that nothing but compute runs beside them.
  auto step = [](bool overlap, A2aOverlapScope scope, double link_scale) {
    Setup s = mixtral(2, 1, 4, 2, 8);
    s.system = "gb200-nvl72";
    s.plan.dp_comm_overlap = false;
    s.plan.param_gather_overlap = false;
    s.software.moe_a2a_overlap = overlap;
    s.software.moe_a2a_overlap_scope = scope;
    topologies::ClusterSpec spec = topologies::find_system(s.system)->make(s.gpus);
    spec.nvlink->link_bandwidth = spec.nvlink->link_bandwidth * link_scale;
    s.cluster = spec;
    return simulate(s, with_backend(Backend::analytical));
  };
  for (const double scale : {1.0, 0.0005}) {
    INFO("NVLink bandwidth x " << scale);
    const StepResult blocking = step(false, A2aOverlapScope::chunk, scale);
    const StepResult modules = step(true, A2aOverlapScope::modules, scale);
    const StepResult chained = step(true, A2aOverlapScope::chunk, scale);
    // Blocking, every all-to-all is exposed: their sum.
    const double all_to_alls = blocking.stages[0].exposed_ep.s();
    REQUIRE(all_to_alls > 0);
    // Chained, they hide behind more compute than beside the next sub-module alone, but run one
    // after another: a pass ends no sooner than its all-to-alls back to back, so at most the
    // passes' compute hides them.
    const double exposed = chained.stages[0].exposed_ep.s();
    CHECK(exposed <= modules.stages[0].exposed_ep.s());
    CHECK(exposed >= all_to_alls - chained.stages[0].compute.s());
    CHECK(exposed <= all_to_alls);
    if (scale < 1) {
      // All-to-alls far slower than the compute: the chains are the passes.
      REQUIRE(all_to_alls > 10 * chained.stages[0].compute.s());
      CHECK(exposed == Approx(all_to_alls).epsilon(0.05));
    }
  }
}

TEST_CASE("an overlapped all-to-all slows the compute beside it only while it is in flight",
          "[step][moe]") {
  // As above: two MoE layers, EP2 in one GB200 NVL72 domain, data-parallel traffic outside the
  // passes. NVLink 20 times faster: each all-to-all is done well before the compute beside it.
  Setup s = mixtral(2, 1, 4, 2, 8);
  s.system = "gb200-nvl72";
  s.plan.dp_comm_overlap = false;
  s.plan.param_gather_overlap = false;
  topologies::ClusterSpec spec = topologies::find_system(s.system)->make(s.gpus);
  spec.nvlink->link_bandwidth = spec.nvlink->link_bandwidth * 20.0;
  s.cluster = spec;
  const StepResult blocking = simulate(s, with_backend(Backend::analytical));
  s.software.moe_a2a_overlap = true;
  const double slowdown = workload_of(s).dp_contention;
  REQUIRE(slowdown > 0);
  for (const Backend backend : {Backend::analytical, Backend::flow}) {
    INFO((backend == Backend::flow ? "flow" : "analytical"));
    const StepResult overlapped = simulate(s, with_backend(backend));
    // Every all-to-all hidden, and the compute slower by the SMs they held for their own time
    // (blocking, the exposed time is theirs), not for the compute they ran beside.
    const double all_to_alls = blocking.stages[0].exposed_ep.s();
    REQUIRE(all_to_alls > 0);
    CHECK(overlapped.stages[0].exposed_ep.s() == 0);
    CHECK(overlapped.stages[0].compute.s() - blocking.stages[0].compute.s() ==
          Approx(slowdown * all_to_alls).epsilon(1e-6));
  }
}
