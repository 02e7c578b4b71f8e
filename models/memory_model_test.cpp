#include "models/memory_model.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>

#include "models/compute_model.hpp"
#include "models/compute_profile.hpp"
#include "models/model_presets.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/software_stack.hpp"
#include "models/workload.hpp"
#include "tests/model_cases.hpp"

using namespace fabricsim;
using namespace fabricsim::models;
using topologies::Precision;

using fabricsim::testing::Case;
using fabricsim::testing::h100;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

/// llama2-7b (32 layers, hidden 4096, seq 4096) on tp x pp x dp GPUs, one micro-batch per
/// replica per pipeline stage unless `microbatches` says otherwise.
Case llama7b(int tp, int pp, int dp, int microbatches = 1) {
  Case c;
  c.model = *find_model("llama2-7b");
  c.plan.tp = tp;
  c.plan.pp = pp;
  c.plan.dp = dp;
  c.training.global_batch = dp * microbatches;
  return c;
}

MemoryReport report(const Case& c, Workload* workload_out = nullptr) {
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  const Workload w =
      build_workload(c.model, c.plan, c.training, h100(), default_compute_profile(h100()));
  if (workload_out != nullptr) *workload_out = w;
  return memory_report(w, c.plan, c.training, h100());
}

}  // namespace

TEST_CASE("model states per parameter follow the ZeRO stage", "[memory]") {
  // Mixed-precision Adam: bf16 weights (2 bytes), gradients of g bytes (fp32 under the default
  // Megatron-Core stack: 4), and an fp32 master copy plus two fp32 moments (12 bytes). ZeRO-1
  // shards the 12, ZeRO-2 the gradients too, ZeRO-3 everything: 2 + g + 12, 2 + g + 12/N,
  // 2 + (g + 12)/N and (2 + g + 12)/N bytes per parameter over N = dp.
  const double dp = 8;
  const double g = 4;
  const double expected[4] = {2 + g + 12, 2 + g + 12 / dp, 2 + (g + 12) / dp, (2 + g + 12) / dp};
  for (int zero = 0; zero <= 3; ++zero) {
    INFO("zero " << zero);
    Case c = llama7b(1, 1, 8);
    c.plan.zero = zero;
    Workload w;
    const MemoryReport r = report(c, &w);
    REQUIRE(r.stages.size() == 1);
    const StageMemory& m = r.stages[0];
    const double params = w.stages[0].dense_params;
    CHECK(w.stages[0].expert_params == 0);
    CHECK(w.stages[0].trainable_params == params);
    CHECK(w.grad_bytes == g);
    // ZeRO-3 also holds the largest bucket gathered in full: the one in use and the one being
    // prefetched (2 bytes each), and its unsharded gradient (g bytes).
    double bucket = 0;
    for (const ChunkWork& chunk : w.stages[0].chunks) {
      for (const ChunkWork::Bucket& b : chunk.buckets)
        bucket = std::max(bucket, b.dense + b.expert);
    }
    const double gathered = zero >= 3 ? bucket : 0;
    CHECK((m.weights + m.gradients + m.optimizer - (4 + g) * gathered) / params ==
          Approx(expected[zero]).epsilon(1e-12));
    CHECK((m.weights - 4 * gathered) / params == Approx(zero >= 3 ? 2 / dp : 2).epsilon(1e-12));
    CHECK((m.gradients - g * gathered) / params == Approx(zero >= 2 ? g / dp : g).epsilon(1e-12));
    CHECK(m.optimizer / params == Approx(zero >= 1 ? 12 / dp : 12).epsilon(1e-12));
    CHECK(m.framework == kFrameworkReserveBytes);
  }
}

TEST_CASE("fp16 keeps fp32 gradients, fp8 on Hopper two extra bytes of weights", "[memory]") {
  Case c = llama7b(1, 1, 8);
  c.plan.zero = 0;
  c.training.precision = Precision::fp16;
  Workload w;
  MemoryReport r = report(c, &w);
  const double params = w.stages[0].dense_params;
  CHECK(w.grad_bytes == 4);
  CHECK(r.stages[0].gradients == Approx(4 * params).epsilon(1e-12));
  CHECK(r.stages[0].weights == Approx(2 * params).epsilon(1e-12));

  c.training.precision = Precision::fp8;
  r = report(c, &w);
  CHECK(w.grad_bytes == 4);  // the default Megatron-Core stack reduces gradients in fp32
  // bf16, the FP8 copy and its transpose (Hopper's FP8 GEMMs read only the TN layout).
  CHECK(r.stages[0].weights == Approx(4 * params).epsilon(1e-12));
  CHECK(r.stages[0].gradients == Approx(4 * params).epsilon(1e-12));
  CHECK(r.stages[0].optimizer == Approx(12 * params).epsilon(1e-12));
}

TEST_CASE("Adam's state in bf16 holds 6 bytes, FP8 parameters drop the bf16 weights", "[memory]") {
  // Apex's DistributedFusedAdam with dtype bf16 keeps its parameter copy and both moments in
  // bf16 (6 bytes per trained parameter, against 12 in fp32), sharded by ZeRO-1 as before; FP8
  // parameters drop the bf16 weights beside their FP8 form (on Hopper the FP8 data and its
  // transpose, 2 bytes against 2 + 2). The
  // optimizer step reads and writes that state: 6 x state bytes, plus the gradient and the
  // written copy (10), per parameter of the shard.
  Case c = llama7b(1, 1, 8);
  c.plan.zero = 1;
  c.training.precision = Precision::fp8;
  LoweringOptions options;
  options.software = default_software();
  const Workload fp32 =
      build_workload(c.model, c.plan, c.training, h100(), default_compute_profile(h100()), options);
  options.software.optimizer_state_bytes = 2;
  options.software.fp8_params = true;
  const Workload bf16 =
      build_workload(c.model, c.plan, c.training, h100(), default_compute_profile(h100()), options);
  const double params = fp32.stages[0].dense_params;
  const StageMemory a = memory_report(fp32, c.plan, c.training, h100()).stages[0];
  const StageMemory b = memory_report(bf16, c.plan, c.training, h100()).stages[0];
  CHECK(a.optimizer == Approx(12 * params / 8).epsilon(1e-12));
  CHECK(b.optimizer == Approx(6 * params / 8).epsilon(1e-12));
  CHECK(a.weights == Approx(4 * params).epsilon(1e-12));
  CHECK(b.weights == Approx(2 * params).epsilon(1e-12));
  CHECK(b.gradients == a.gradients);
  CHECK(b.activations == a.activations);
  // The optimizer's traffic: 34 and 22 bytes per parameter of the shard (one launch beside).
  const ComputeProfile profile = default_compute_profile(h100());
  const double launch = profile.kernel_launch.s();
  const double per_byte = memory_seconds(h100(), profile, 1.0);
  auto adam = [&](const Workload& w) {
    return (w.stages[0].optimizer - w.stages[0].weight_quantize).s() - launch;
  };
  CHECK(adam(fp32) == Approx(34 * params / 8 * per_byte));
  CHECK(adam(bf16) == Approx(22 * params / 8 * per_byte));
  // In bf16 there is no FP8 form to keep alone, and NVFP4 weights (Blackwell) keep their bf16
  // copy beside the rowwise and columnwise FP4 ones (16x16 blocks, one E4M3 scale each).
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  for (const auto& [precision, bytes] :
       {std::pair{Precision::bf16, 2.0}, {Precision::nvfp4, 2.0 + 2 * (0.5 + 1.0 / 256)}}) {
    c.training.precision = precision;
    CHECK(build_workload(c.model, c.plan, c.training, b200, default_compute_profile(b200), options)
              .weight_bytes == Approx(bytes).epsilon(1e-12));
  }
  // Megatron-Bridge's FP8 and MXFP8 presets gather FP8 parameters (fp8_param_gather).
  CHECK(find_software("megatron-bridge-25.09")->fp8_params);
  CHECK(find_software("megatron-bridge-26.02.01")->fp8_params);
  CHECK_FALSE(find_software("megatron-core-r0.8.0")->fp8_params);
}

TEST_CASE("a ZeRO parameter gather moves per-tensor FP8 parameters as one byte, MXFP8 in bf16",
          "[memory]") {
  // Megatron-Core's fp8_param_gather: a per-tensor-scaled FP8 parameter lives in a uint8 buffer
  // and is all-gathered as such; an MXFP8 one is gathered in bf16 through the buffer it shares
  // with the gradients (core_v0.15.0 distributed_data_parallel.py, param_and_grad_buffer.py).
  Case c = llama7b(1, 1, 8);
  c.plan.zero = 3;
  LoweringOptions options;
  options.software = default_software();
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  auto gathered = [&](Precision p, bool fp8_params) {
    c.training.precision = p;
    options.software.fp8_params = fp8_params;
    return build_workload(c.model, c.plan, c.training, b200, default_compute_profile(b200),
                          options);
  };
  CHECK(gathered(Precision::fp8, true).param_bytes == 1.0);
  CHECK(gathered(Precision::fp8, false).param_bytes == 2.0);
  CHECK(gathered(Precision::mxfp8, true).param_bytes == 2.0);
  CHECK(gathered(Precision::bf16, true).param_bytes == 2.0);
  // ZeRO-3 holds the shard and the gathered buckets in that form: half the bf16 bytes.
  const Workload fp8 = gathered(Precision::fp8, true);
  const Workload bf16 = gathered(Precision::fp8, false);
  CHECK(memory_report(fp8, c.plan, c.training, b200).stages[0].weights ==
        Approx(0.5 * memory_report(bf16, c.plan, c.training, b200).stages[0].weights));
}

TEST_CASE("gradients take the bytes their software reduces them in", "[memory]") {
  // Megatron-Core reduces bf16 training's gradients in fp32; Megatron-Bridge's performance
  // recipes switch that off; fp16 keeps fp32 gradients whatever the software.
  Case c = llama7b(1, 1, 8);
  c.plan.zero = 0;
  for (const char* id : {"megatron-core-r0.8.0", "megatron-bridge-25.11"}) {
    INFO(id);
    const SoftwareStack& stack = *find_software(id);
    LoweringOptions options;
    options.software = stack;
    const double expected = stack.grad_reduce_fp32 ? 4.0 : 2.0;
    for (const Precision p : {Precision::bf16, Precision::fp8, Precision::fp16}) {
      c.training.precision = p;
      const Workload w = build_workload(c.model, c.plan, c.training, h100(),
                                        default_compute_profile(h100()), options);
      CHECK(w.grad_bytes == (p == Precision::fp16 ? 4.0 : expected));
      const MemoryReport r = memory_report(w, c.plan, c.training, h100());
      CHECK(r.stages[0].gradients == Approx(w.grad_bytes * w.stages[0].dense_params));
    }
  }
  CHECK(find_software("megatron-core-r0.8.0")->grad_reduce_fp32);
  CHECK_FALSE(find_software("megatron-bridge-25.11")->grad_reduce_fp32);
}

TEST_CASE("context-parallel ranks share the data-parallel shards", "[memory]") {
  // CP ranks hold the same parameters, so ZeRO shards them over dp x cp (Megatron-Core's
  // data_parallel_group(with_context_parallel=True)): DP4 CP2 holds what DP8 holds.
  Case dp8 = llama7b(1, 1, 8);
  Case cp2 = llama7b(1, 1, 4);
  cp2.plan.cp = 2;
  for (int zero = 1; zero <= 3; ++zero) {
    INFO("zero " << zero);
    dp8.plan.zero = zero;
    cp2.plan.zero = zero;
    const StageMemory a = report(dp8).stages[0];
    const StageMemory b = report(cp2).stages[0];
    CHECK(b.optimizer == Approx(a.optimizer).epsilon(1e-12));
    CHECK(b.gradients == Approx(a.gradients).epsilon(1e-12));
    CHECK(b.weights == Approx(a.weights).epsilon(1e-12));
  }
}

TEST_CASE("tensor and pipeline parallelism divide the model states", "[memory]") {
  // The weights of TP8 are an eighth of TP1's apart from what TP replicates: the norms.
  Case one = llama7b(1, 1, 1);
  Case eight = llama7b(8, 1, 1);
  Workload w1, w8;
  report(one, &w1);
  report(eight, &w8);
  const TransformerConfig& m = one.model;
  const double norms = m.layers * 2.0 * m.hidden;
  CHECK(w8.stages[0].dense_params ==
        Approx((w1.stages[0].dense_params - norms) / 8 + norms).epsilon(1e-12));
  // Pipeline stages hold their layers; the first the embedding, the last the LM head.
  Case piped = llama7b(1, 4, 1, 4);
  Workload w4;
  report(piped, &w4);
  double total = 0;
  for (const StageWork& s : w4.stages)
    total += s.dense_params;
  CHECK(total == Approx(w1.stages[0].dense_params).epsilon(1e-12));
  const double table = static_cast<double>(m.vocab) * m.hidden;
  CHECK(w4.stages[0].dense_params - table == Approx(w4.stages[1].dense_params).epsilon(1e-12));
  CHECK(w4.stages[3].dense_params - table == Approx(w4.stages[1].dense_params).epsilon(1e-12));
}

TEST_CASE("MoE expert states shard over expert data parallelism", "[memory]") {
  // mixtral-8x7b with EP8 over 8 GPUs: each rank holds one expert per layer, and no other rank
  // holds it (expert-DP = tp x cp x dp / ep = 1), so ZeRO-1 shards only the dense states.
  Case c;
  c.model = *find_model("mixtral-8x7b");
  c.plan.tp = 1;
  c.plan.dp = 8;
  c.plan.ep = 8;
  c.plan.zero = 1;
  c.training.global_batch = 8;
  c.training.seq_len = 4096;
  Workload w;
  const MemoryReport r = report(c, &w);
  const StageWork& s = w.stages[0];
  const TransformerConfig& m = c.model;
  CHECK(s.expert_params == Approx(m.layers * 3.0 * m.hidden * m.moe->expert_ffn).epsilon(1e-12));
  CHECK(r.stages[0].optimizer ==
        Approx(12 * (s.dense_params / 8 + s.expert_params)).epsilon(1e-12));
  CHECK(r.stages[0].gradients ==
        Approx(w.grad_bytes * (s.dense_params + s.expert_params)).epsilon(1e-12));
  // ZeRO-3 shards the expert weights over expert-DP (1) as well.
  c.plan.zero = 3;
  const MemoryReport r3 = report(c, &w);
  double bucket = 0;
  for (const ChunkWork& chunk : s.chunks) {
    for (const ChunkWork::Bucket& b : chunk.buckets)
      bucket = std::max(bucket, b.dense + b.expert);
  }
  CHECK(r3.stages[0].weights ==
        Approx(2 * (s.dense_params / 8 + s.expert_params) + 4 * bucket).epsilon(1e-12));
}

TEST_CASE("LoRA trains and keeps optimizer states for the adapters only", "[memory]") {
  Case c = llama7b(1, 1, 8);
  c.plan.zero = 1;
  c.training.task = TrainingTask::lora;
  Workload w;
  const MemoryReport r = report(c, &w);
  const StageWork& s = w.stages[0];
  REQUIRE(s.trainable_params > 0);
  CHECK(s.trainable_params < 0.01 * s.dense_params);
  CHECK(r.stages[0].weights == Approx(2 * s.dense_params).epsilon(1e-12));
  CHECK(r.stages[0].gradients == Approx(w.grad_bytes * s.trainable_params).epsilon(1e-12));
  CHECK(r.stages[0].optimizer == Approx(12 * s.trainable_params / 8).epsilon(1e-12));
}

TEST_CASE("activations per recomputation mode", "[memory]") {
  // TP1, one micro-batch of T = 4096 tokens alive at a time (pp = 1). Per layer without full
  // recomputation: norm and GEMM inputs 4Th, q/k/v 3Th, attention output Th, fp32 softmax
  // statistics 8 T heads bytes, and the SwiGLU fc1 output (2 T ffn) plus its activation
  // (T ffn), all bf16; full recomputation keeps the layer input Th only. The LM head stage adds
  // fp32 logits (4 T vocab bytes) and its input (Th).
  const TransformerConfig model = *find_model("llama2-7b");
  const double T = model.seq_len, h = model.hidden, l = model.layers;
  const double head = 4 * T * model.vocab + 2 * T * h;
  const double layer =
      2 * (4 * T * h + 3 * T * h + T * h + T * 3.0 * model.ffn) + 8 * T * model.heads;
  double bytes[3];
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    Case c = llama7b(1, 1, 8);
    c.plan.recompute = mode;
    const MemoryReport r = report(c);
    CHECK(r.stages[0].in_flight == 1);
    bytes[static_cast<int>(mode)] = r.stages[0].activations;
  }
  CHECK(bytes[0] == Approx(l * layer + head).epsilon(1e-12));
  CHECK(bytes[2] == Approx(l * 2 * T * h + head).epsilon(1e-12));
  // With flash attention there is no score matrix for selective recomputation to drop: it keeps
  // what no recomputation keeps.
  CHECK(bytes[1] == bytes[0]);
  CHECK(bytes[0] > 5 * bytes[2]);
}

TEST_CASE("a low-precision recipe keeps its GEMM inputs quantized for the weight gradient",
          "[memory]") {
  // Per layer, FP8 (per-tensor scaling, 1 byte) against BF16: the QKV and FC1 inputs (2Th) and
  // FC2's input (T ffn) are kept in FP8, and the attention output, kept in BF16 for the
  // attention's own backward, gains an FP8 copy as the projection's input (Th).
  const TransformerConfig model = *find_model("llama2-7b");
  const double T = model.seq_len, h = model.hidden, l = model.layers, f = model.ffn;
  const auto activations = [](Precision p) {
    Case c = llama7b(1, 1, 8);
    c.training.precision = p;
    return report(c).stages[0].activations;
  };
  const double bf16 = activations(Precision::bf16);
  const double per_byte = -2 * T * h + T * h - T * f;  // each quantized copy's byte change
  CHECK(activations(Precision::fp8) - bf16 == Approx(l * per_byte).epsilon(1e-12));
}

TEST_CASE("LoRA keeps no input of a frozen GEMM, only what its adapters and kernels read",
          "[memory]") {
  // Per layer against pre-training: the QKV adapter keeps the norm's output in BF16 (Th) where
  // pre-training kept the QKV and FC1 inputs (2Th at the recipe's bytes), the projection's
  // quantized input copy (Th in FP8) goes, and so does FC2's input (T ffn at the recipe's bytes);
  // the fc1 output the activation's backward reads stays.
  const TransformerConfig model = *find_model("llama2-7b");
  const double T = model.seq_len, h = model.hidden, l = model.layers, f = model.ffn;
  const auto activations = [](Precision p, TrainingTask task) {
    Case c = llama7b(1, 1, 8);
    c.training.precision = p;
    c.training.task = task;
    return report(c).stages[0].activations;
  };
  const double bf16 = activations(Precision::bf16, TrainingTask::pretrain);
  CHECK(activations(Precision::bf16, TrainingTask::lora) - bf16 ==
        Approx(l * (2 * T * h - 2 * 2 * T * h - 2 * T * f)).epsilon(1e-12));
  const double fp8 = activations(Precision::fp8, TrainingTask::pretrain);
  CHECK(activations(Precision::fp8, TrainingTask::lora) - fp8 ==
        Approx(l * (2 * T * h - 2 * T * h - T * h - T * f)).epsilon(1e-12));
}

TEST_CASE("recomputed modules drop their outputs and rerun their forward in backward", "[memory]") {
  // Llama 2 7B, TP1, one micro-batch of T tokens in flight; per layer in BF16 the norms'
  // outputs (the QKV and FC1 inputs) are 2Th, the MLP's fc1 and activation outputs 3 T ffn.
  const TransformerConfig model = *find_model("llama2-7b");
  const double T = model.seq_len, h = model.hidden, l = model.layers, f = model.ffn;
  const auto run = [](Precision p, uint8_t modules, Workload* w) {
    Case c = llama7b(1, 1, 8);
    c.training.precision = p;
    c.plan.recompute_modules = modules;
    return report(c, w).stages[0].activations;
  };
  const auto bit = [](RecomputeModule m) { return static_cast<uint8_t>(m); };
  Workload plain, norms, mlp;
  const double base = run(Precision::bf16, 0, &plain);
  CHECK(base - run(Precision::bf16, bit(RecomputeModule::layernorm), &norms) ==
        Approx(l * 2 * 2 * T * h).epsilon(1e-12));
  CHECK(base - run(Precision::bf16, bit(RecomputeModule::mlp), &mlp) ==
        Approx(l * 2 * 3 * T * f).epsilon(1e-12));
  // Under FP8 the QKV and FC1 GEMMs keep their own quantized copies of the norms' outputs.
  CHECK(run(Precision::fp8, bit(RecomputeModule::layernorm), nullptr) ==
        run(Precision::fp8, 0, nullptr));
  // The backward reruns the norms, or the FC1 GEMM and the activation, before the layer's own.
  const auto count = [](const Workload& w, std::string_view name) {
    int n = 0;
    for (const WorkOp& op : w.stages[0].chunks[0].backward.ops)
      n += op.kind == WorkOp::Kind::compute && name == op.name;
    return n;
  };
  CHECK(count(plain, "norm_recompute") == 0);
  CHECK(count(norms, "norm_recompute") == 2 * model.layers);
  CHECK(count(mlp, "fc1_recompute") == model.layers);
  CHECK(norms.stages[0].chunks[0].backward.compute > plain.stages[0].chunks[0].backward.compute);
  CHECK(norms.stages[0].chunks[0].forward.compute == plain.stages[0].chunks[0].forward.compute);
}

TEST_CASE("1F1B keeps pp - stage micro-batches in flight", "[memory][pipeline]") {
  // PP4 with 8 micro-batches: stage 0 holds 4 micro-batches at its peak, the last stage 1.
  Case c = llama7b(1, 4, 2, 8);
  Workload w;
  const MemoryReport r = report(c, &w);
  REQUIRE(r.stages.size() == 4);
  for (int s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(r.stages[s].in_flight == 4 - s);
    CHECK(r.stages[s].activations ==
          Approx((4 - s) * w.stages[s].chunks[0].activation_bytes).epsilon(1e-12));
  }
  // Interleaving (vp 2) warms up longer: (pp - 1) x 2 + (vp - 1) x pp forwards, then one more.
  c.plan.vp = 2;
  const MemoryReport ri = report(c, &w);
  const auto schedule = pipeline_schedule(4, 2, 8);
  CHECK(ri.stages[0].in_flight == 3 * 2 + 1 * 4 + 1);
  for (int s = 0; s < 4; ++s)
    CHECK(ri.stages[s].in_flight == max_in_flight(schedule[s]));
  for (const StageMemory& m : ri.stages) {
    CHECK(m.total() <= ri.stages[static_cast<size_t>(ri.worst_stage)].total());
  }
}

TEST_CASE("a plan that does not fit says why, with the breakdown", "[memory]") {
  // llama2-70b on one node with TP8 and no optimizer sharding: ~8.7e9 parameters per GPU need
  // 16 bytes each, far beyond 80 GB.
  Case c;
  c.model = *find_model("llama2-70b");
  c.plan.tp = 8;
  c.plan.zero = 0;
  c.training.global_batch = 4;
  const MemoryReport r = report(c);
  REQUIRE_FALSE(r.fits);
  const StageMemory& m = r.stages[static_cast<size_t>(r.worst_stage)];
  CHECK(m.total() > r.capacity);
  CHECK(r.capacity == Approx(80 * kGiB * 0.99).epsilon(1e-12));
  INFO(r.reason);
  CHECK_THAT(r.reason, Catch::Contains(fmt::format("stage 0 needs {:.1f} GiB of {:.1f} GiB HBM",
                                                   m.total() / kGiB, r.capacity / kGiB)));
  CHECK_THAT(r.reason, Catch::Contains(fmt::format("weights {:.1f}", m.weights / kGiB)));
  CHECK_THAT(r.reason, Catch::Contains(fmt::format("gradients {:.1f}", m.gradients / kGiB)));
  CHECK_THAT(r.reason, Catch::Contains(fmt::format("optimizer {:.1f}", m.optimizer / kGiB)));
  CHECK_THAT(r.reason, Catch::Contains(fmt::format("activations {:.1f}", m.activations / kGiB)));
  CHECK_THAT(r.reason, Catch::Contains("1 micro-batch chunks in flight"));
  CHECK_THAT(r.reason, Catch::Contains("framework 3.0"));
  const nlohmann::json j = memory_to_json(r);
  CHECK(j["fits"] == false);
  CHECK(j["reason"] == r.reason);

  // The same model sharded with ZeRO-1 over 8 more replicas fits, and has no reason.
  Case fits = c;
  fits.plan.zero = 1;
  fits.plan.pp = 4;
  fits.plan.dp = 2;
  fits.training.global_batch = 8;
  const MemoryReport ok = report(fits);
  CHECK(ok.fits);
  CHECK(ok.reason.empty());
}

TEST_CASE("the SwiGLU input kept in FP8 saves a byte per element and casts it each way",
          "[memory]") {
  // Megatron-Core's activation_func_fp8_input_store keeps FC1's output (2 x ffn per token) in
  // FP8 for the activation's backward: one byte per element less in every layer, paid with a
  // cast after the forward activation (2 bytes read, 1 written) and one before its backward.
  Case c = llama7b(1, 1, 8);
  LoweringOptions options;
  options.software = default_software();
  const ComputeProfile profile = default_compute_profile(h100());
  const Workload bf16 = build_workload(c.model, c.plan, c.training, h100(), profile, options);
  options.software.fp8_activation_input = true;
  const Workload fp8 = build_workload(c.model, c.plan, c.training, h100(), profile, options);
  const double elements = 2.0 * c.model.seq_len * c.model.ffn;  // per layer, one sequence
  const StageMemory a = memory_report(bf16, c.plan, c.training, h100()).stages[0];
  const StageMemory b = memory_report(fp8, c.plan, c.training, h100()).stages[0];
  CHECK(a.activations - b.activations == Approx(c.model.layers * elements).epsilon(1e-9));
  CHECK(b.weights == a.weights);
  // Each layer's forward and backward gain one cast of 3 bytes per element.
  auto casts = [&](const PassProgram& pass) {
    double seconds = 0;
    int count = 0;
    for (const WorkOp& op : pass.ops) {
      if (op.kind != WorkOp::Kind::compute || !std::string_view(op.name).starts_with("cast_act"))
        continue;
      seconds += (op.duration - op.overhead).s();
      ++count;
    }
    return std::pair{count, seconds};
  };
  const ChunkWork& before = bf16.stages[0].chunks[0];
  const ChunkWork& after = fp8.stages[0].chunks[0];
  CHECK(casts(before.forward).first == 0);
  CHECK(casts(after.forward).first == c.model.layers);
  CHECK(casts(after.backward).first == c.model.layers);
  CHECK(casts(after.forward).second ==
        Approx(c.model.layers * memory_seconds(h100(), profile, 3.0 * elements)).epsilon(1e-9));
  CHECK(casts(after.backward).second == Approx(casts(after.forward).second).epsilon(1e-12));
}

TEST_CASE("the FP8 weight copies held: a transpose on Hopper only, MXFP8 rowwise and columnwise",
          "[memory]") {
  // Transformer Engine quantizes a weight for its forward GEMM (rowwise) and its data-gradient
  // GEMM (columnwise). A per-tensor FP8 copy serves both on Blackwell, whose FP8 GEMMs read
  // either layout; Hopper's take only TN, so the columnwise copy is a transpose (TE 2.9
  // quantizer.cpp, is_non_tn_fp8_gemm_supported). MXFP8 scales along the GEMM's K dimension:
  // two copies with one E8M0 byte per 32 elements anywhere (module/base.py: usage rowwise and
  // columnwise while gradients are enabled).
  Case c = llama7b(1, 1, 8);
  LoweringOptions options;
  options.software = default_software();
  auto held = [&](const topologies::GpuSpec& gpu, Precision p, bool fp8_params) {
    c.training.precision = p;
    options.software.fp8_params = fp8_params;
    return build_workload(c.model, c.plan, c.training, gpu, default_compute_profile(gpu), options)
        .weight_bytes;
  };
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  CHECK(held(h100(), Precision::fp8, true) == 2.0);
  CHECK(held(h100(), Precision::fp8, false) == 4.0);
  CHECK(held(b200, Precision::fp8, true) == 1.0);
  CHECK(held(b200, Precision::fp8, false) == 3.0);
  CHECK(held(b200, Precision::mxfp8, true) == Approx(2 * (1 + 1.0 / 32)).epsilon(1e-12));
  CHECK(held(b200, Precision::mxfp8, false) == Approx(2 + 2 * (1 + 1.0 / 32)).epsilon(1e-12));
  CHECK(held(b200, Precision::bf16, true) == 2.0);
  // Without a transpose cache (Megatron-Core's disable_parameter_transpose_cache, TE 1.x) a
  // parameter held in FP8 keeps its rowwise copy alone; block scales never transpose.
  options.software.parameter_transpose_cache = false;
  CHECK(held(h100(), Precision::fp8, true) == 1.0);
  CHECK(held(b200, Precision::fp8, true) == 1.0);
  CHECK(held(b200, Precision::mxfp8, true) == Approx(2 * (1 + 1.0 / 32)).epsilon(1e-12));
  // NVFP4 weights held in NVFP4 alone (fp4_params): the two copies with their 16x16 scales, no
  // bf16; FP8 parameters do not make them so, and fp4_params does nothing to an FP8 run.
  options.software.parameter_transpose_cache = true;
  const double nvfp4_copies = 2 * (0.5 + 1.0 / 256);
  CHECK(held(b200, Precision::nvfp4, true) == Approx(2 + nvfp4_copies).epsilon(1e-12));
  options.software.fp4_params = true;
  CHECK(held(b200, Precision::nvfp4, false) == Approx(nvfp4_copies).epsilon(1e-12));
  CHECK(held(b200, Precision::fp8, false) == 3.0);
}
