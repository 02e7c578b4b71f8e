#include "models/workload.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string_view>
#include <tuple>

#include "models/compute_model.hpp"
#include "models/model_presets.hpp"
#include "tests/model_cases.hpp"

using namespace fabricsim;
using namespace fabricsim::models;
using topologies::Precision;

using fabricsim::testing::Case;
using fabricsim::testing::h100;

namespace {

Case make_case(const char* model, int tp, int pp, int dp, int global_batch) {
  Case c;
  c.model = *find_model(model);
  c.plan.tp = tp;
  c.plan.pp = pp;
  c.plan.dp = dp;
  c.training.global_batch = global_batch;
  return c;
}

Workload build(const Case& c) {
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  return build_workload(c.model, c.plan, c.training, h100(), default_compute_profile(h100()));
}

int count_ops(const PassProgram& p, const std::function<bool(const WorkOp&)>& pred) {
  int n = 0;
  for (const WorkOp& op : p.ops)
    n += pred(op) ? 1 : 0;
  return n;
}

/// Compute ops (kernels as the host issues them) in a pass.
int64_t kernel_count(const PassProgram& p) {
  return count_ops(p, [](const WorkOp& op) { return op.kind == WorkOp::Kind::compute; });
}

/// What the GPU of a pass waits on the host: its kernels' overhead beyond the gaps.
sim::Time host_wait(const PassProgram& p, const ComputeProfile& profile) {
  sim::Time t;
  for (const WorkOp& op : p.ops)
    if (op.kind == WorkOp::Kind::compute) t += op.overhead - profile.kernel_gap;
  return t;
}

bool is_collective(const WorkOp& op) {
  return op.kind == WorkOp::Kind::comm || op.kind == WorkOp::Kind::comm_start;
}

std::function<bool(const WorkOp&)> collective_of(GroupKind g) {
  return [g](const WorkOp& op) { return is_collective(op) && op.group == g; };
}

std::function<bool(const WorkOp&)> collective_of(GroupKind g, CollectiveOp c) {
  return [g, c](const WorkOp& op) { return is_collective(op) && op.group == g && op.op == c; };
}

/// Bytes the collectives of `pass` that `which` picks move.
double bytes_moved(const PassProgram& pass, const std::function<bool(const WorkOp&)>& which) {
  double bytes = 0;
  for (const WorkOp& op : pass.ops)
    if (which(op)) bytes += op.bytes.count();
  return bytes;
}

std::function<bool(const WorkOp&)> named(std::string_view name) {
  return [name](const WorkOp& op) { return name == op.name; };
}

/// The attention kernels of a pass, in order.
std::vector<const WorkOp*> attention_ops(const PassProgram& p) {
  std::vector<const WorkOp*> out;
  for (const WorkOp& op : p.ops) {
    if (op.kind == WorkOp::Kind::compute && op.compute == ComputeKind::attention)
      out.push_back(&op);
  }
  return out;
}

/// GPU work of a compute op with its one inter-kernel gap: its duration less what it waited on
/// the host.
double gpu_work(const WorkOp& op, const ComputeProfile& profile) {
  return (op.duration - op.overhead).s() + profile.kernel_gap.s();
}

/// GPU work of the first chunk's ops whose names start with one of `prefixes`, in order.
std::vector<double> work_of(const Workload& w, bool backward,
                            std::initializer_list<std::string_view> prefixes,
                            const ComputeProfile& profile) {
  std::vector<double> seconds;
  const ChunkWork& chunk = w.stages[0].chunks[0];
  for (const WorkOp& op : (backward ? chunk.backward : chunk.forward).ops) {
    const std::string_view name = op.name;
    for (std::string_view prefix : prefixes) {
      if (name.starts_with(prefix)) {
        seconds.push_back(gpu_work(op, profile));
        break;
      }
    }
  }
  return seconds;
}

const WorkOp& find_op(const PassProgram& p, std::string_view name) {
  for (const WorkOp& op : p.ops) {
    if (op.kind == WorkOp::Kind::compute && name == op.name) return op;
  }
  FAIL("no op named " << name);
  return p.ops.front();
}

/// A memory-bound op of an H100 pass: its bytes at the elementwise rate (gpu_work: with one gap),
/// and a gap per kernel in its overhead.
void check_memory_op(const PassProgram& pass, std::string_view name, double bytes, int64_t kernels,
                     const ComputeProfile& profile) {
  INFO(name);
  const WorkOp& op = find_op(pass, name);
  CHECK(gpu_work(op, profile) ==
        Approx(memory_seconds(h100(), profile, bytes) + profile.kernel_gap.s())
            .epsilon(1e-9)
            .margin(2e-12));
  CHECK(op.overhead >= profile.kernel_gap * kernels);
}

/// A bf16 flash-attention kernel of an H100 pass with the default stack's library: the compute
/// model's time for its FLOPs at `attended` keys a query over a `sequence`-token sequence, at the
/// step's sustained clock, plus one gap.
double attention_kernel_seconds(const WorkOp& op, double attended, double sequence,
                                const ComputeProfile& profile) {
  FlashAttention k;
  k.kernel = SoftwareStack{}.attention;
  k.flops = op.flops;
  k.attended = attended;
  k.sequence = sequence;
  return flash_attention_seconds(h100(), profile, k) /
             sustained_clock(h100(), profile, Precision::bf16) +
         profile.kernel_gap.s();
}

/// Matmul weights of the layers (attention projections and MLPs, no biases or norms).
double layer_matmul_weights(const TransformerConfig& m) {
  const ParameterCount p = count_parameters(m);
  return p.attention + p.mlp_dense + p.mlp_experts + p.router;
}

/// Mixtral 8x7B on eight GPUs with EP 8, 1,024-token sequences: dropless routing, one local
/// expert per GPU.
Case dropless_ep8() {
  Case moe = make_case("mixtral-8x7b", 1, 1, 8, 64);
  moe.plan.ep = 8;
  moe.training.seq_len = 1024;
  validate_plan(moe.plan, moe.training, moe.model, moe.plan.gpus(), "test", "/parallelism");
  return moe;
}

}  // namespace

TEST_CASE("tokens and micro-batches per step", "[workload]") {
  Case c = make_case("llama2-7b", 1, 1, 4, 32);
  c.plan.micro_batch = 2;
  Workload w = build(c);
  CHECK(w.tokens_per_step == 32.0 * 4096);
  CHECK(w.seq_len == 4096);
  CHECK(w.microbatches == 32 / (4 * 2));
  c.training.seq_len = 1024;
  w = build(c);
  CHECK(w.tokens_per_step == 32.0 * 1024);
  CHECK(w.seq_len == 1024);
}

TEST_CASE("model FLOPs of a dense model: 6 N tokens plus the attention term", "[workload]") {
  // Per token: 6 x (matmul weights of the layers + the LM head's V h) for forward and backward,
  // plus 3 x 4 l s h for QK^T and AV over the full sequence (Megatron counts attention
  // non-causally). llama2-7b: heads x head_dim = hidden.
  for (auto [tp, pp, dp] : {std::tuple{1, 1, 8}, {8, 1, 1}, {2, 2, 2}}) {
    const Case c = make_case("llama2-7b", tp, pp, dp, 16);
    const Workload w = build(c);
    const TransformerConfig& m = c.model;
    const double l = m.layers, h = m.hidden, s = m.seq_len, v = m.vocab;
    const double per_token = 6 * (layer_matmul_weights(m) + v * h) + 12 * l * s * h;
    CHECK(w.model_flops == Approx(per_token * w.tokens_per_step).epsilon(1e-12));
    CHECK(w.model_flops ==
          Approx(training_flops_per_token(m, false) * w.tokens_per_step).epsilon(1e-12));
  }
  // GPT-style models reduce to Megatron's 72 l h^2 (1 + s/6h + V/12lh) per token.
  const Case gpt = make_case("megatron-1.7b", 1, 1, 8, 16);
  const Workload w = build(gpt);
  CHECK(w.model_flops ==
        Approx(megatron_flops_per_token(gpt.model) * w.tokens_per_step).epsilon(1e-12));
  // Packed fine-tuning documents: attention spans one document, not the whole sequence.
  Case sft = make_case("llama2-7b", 1, 1, 8, 16);
  sft.training.task = TrainingTask::sft;
  const Workload ws = build(sft);
  const TransformerConfig& m = sft.model;
  const double per_token = 6 * (layer_matmul_weights(m) + static_cast<double>(m.vocab) * m.hidden) +
                           12.0 * m.layers * 256 * m.hidden;
  CHECK(ws.model_flops == Approx(per_token * ws.tokens_per_step).epsilon(1e-12));
}

TEST_CASE("executed FLOPs: causal attention, flash backward and recomputation", "[workload]") {
  // GEMMs run once forward and twice backward (dgrad + wgrad); causal attention does half the
  // scores forward and 2.5x that backward (flash attention recomputes the scores); full
  // recomputation runs every layer's forward again (not the LM head). Sharding (TP, CP, PP, DP)
  // only splits the work.
  const TransformerConfig& m = *find_model("llama2-7b");
  const FlopsPerToken f = flops_per_token(m);
  for (auto [tp, pp, dp, cp] : {std::tuple{1, 1, 8, 1}, {8, 1, 1, 1}, {2, 2, 1, 2}}) {
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
      INFO("tp " << tp << " pp " << pp << " cp " << cp << " recompute " << to_string(r));
      Case c = make_case("llama2-7b", tp, pp, dp, 8);
      c.plan.cp = cp;
      c.plan.recompute = r;
      const Workload w = build(c);
      double per_token = 3 * f.dense_matmul + 3.5 * 0.5 * f.attention_scores;
      if (r == Recompute::full) per_token += f.dense_matmul - f.logits + 0.5 * f.attention_scores;
      CHECK(w.executed_flops == Approx(per_token * w.tokens_per_step).epsilon(1e-12));
    }
  }
}

TEST_CASE("attention kernels: half the scores with a causal mask", "[workload]") {
  // Forward: 2 x T x S x heads x (d_qk + d_v) per layer, halved when causal; backward 2.5x.
  for (bool causal : {true, false}) {
    Case c = make_case("llama2-7b", 1, 1, 8, 8);
    c.training.causal = causal;
    const Workload w = build(c);
    const ChunkWork& chunk = w.stages[0].chunks[0];
    const auto attention_flops = [](const PassProgram& p) {
      double sum = 0;
      for (const WorkOp& op : p.ops) {
        if (op.kind == WorkOp::Kind::compute && op.compute == ComputeKind::attention)
          sum += op.flops;
      }
      return sum;
    };
    const double T = 4096, heads = 32, d = 128;
    const double fwd = 32 * 2 * T * T * heads * 2 * d * (causal ? 0.5 : 1.0);
    CHECK(attention_flops(chunk.forward) == Approx(fwd).epsilon(1e-12));
    CHECK(attention_flops(chunk.backward) == Approx(2.5 * fwd).epsilon(1e-12));
  }
}

TEST_CASE("sliding-window layers attend to their band, full layers to the sequence", "[workload]") {
  // Llama 2 7B at 4096 tokens with a 512-token window on every layer but every fourth: a
  // banded query sees 2w - w^2/S keys before the causal halving (S = 4096, w = 512), a full one
  // S; the banded kernel computes a tile more (128 keys on Hopper), and its ramp sees those.
  // Model FLOPs keep the full-attention convention.
  Case full = make_case("llama2-7b", 1, 1, 8, 8);
  Case banded = full;
  banded.model.sliding_window = 512;
  banded.model.full_attention_every = 4;
  const Workload a = build(full), b = build(banded);
  const auto fa = attention_ops(a.stages[0].chunks[0].forward);
  const auto fb = attention_ops(b.stages[0].chunks[0].forward);
  REQUIRE(fa.size() == 32);
  REQUIRE(fb.size() == 32);
  const double S = 4096, w = 512;
  for (int layer = 0; layer < 32; ++layer) {
    INFO("layer " << layer);
    const bool windowed = (layer + 1) % 4 != 0;
    CHECK(is_windowed_layer(banded.model, layer) == windowed);
    const double ratio = windowed ? (2 * w - w * w / S) / S : 1.0;
    const double tiles = windowed ? (ratio * S / 2 + 128) / (ratio * S / 2) : 1.0;
    CHECK(fb[layer]->flops == Approx(fa[layer]->flops * ratio).epsilon(1e-12));
    if (windowed) CHECK(fb[layer]->duration > fa[layer]->duration * ratio * tiles);  // ramp
    if (windowed) CHECK(fb[layer]->duration < fa[layer]->duration * ratio * tiles * 1.5);
    if (!windowed) CHECK(fb[layer]->duration == fa[layer]->duration);
  }
  CHECK(b.model_flops == a.model_flops);
  CHECK(b.executed_flops < a.executed_flops);
  // A window as long as the sequence, or every layer full, is full attention, bit for bit.
  for (auto [window, every] : {std::pair{4096, 0}, {8192, 2}, {512, 1}}) {
    Case same = full;
    same.model.sliding_window = window;
    same.model.full_attention_every = every;
    const Workload c = build(same);
    CHECK(c.stages[0].chunks[0].forward.compute == a.stages[0].chunks[0].forward.compute);
    CHECK(c.stages[0].chunks[0].backward.compute == a.stages[0].chunks[0].backward.compute);
  }
  // The unfused path computes the whole score matrix whatever the mask.
  full.training.unfused_attention = banded.training.unfused_attention = true;
  CHECK(build(banded).stages[0].chunks[0].forward.compute ==
        build(full).stages[0].chunks[0].forward.compute);
}

TEST_CASE("ring attention: each CP step attends its share of the keys, and the merges move theirs",
          "[workload]") {
  // Llama 2 7B at 4,096 tokens over CP 2: each rank holds 2,048 tokens in two load-balanced
  // chunks, and every ring step attends seq / (2 cp) = 1,024 keys per query (the diagonal's
  // causal block, or half the queries or keys unmasked). Around the kernels: K and V packed
  // into the send buffer, each step's partial output merged into the output (4 bytes per value
  // at the first step, 6 at each later one), and backward dQ, dK and dV likewise.
  Case one = make_case("llama2-7b", 1, 1, 8, 8);
  Case ring = make_case("llama2-7b", 1, 1, 4, 8);
  ring.plan.cp = 2;
  const Workload a = build(one), w = build(ring);
  const ComputeProfile p = default_compute_profile(h100());
  const PassProgram& fwd = w.stages[0].chunks[0].forward;
  const PassProgram& bwd = w.stages[0].chunks[0].backward;
  const auto steps = attention_ops(fwd);
  REQUIRE(steps.size() == 2 * 32);
  REQUIRE(attention_ops(a.stages[0].chunks[0].forward).size() == 32);
  // The ranks share the layer's attention FLOPs evenly, step by step.
  const double layer = attention_ops(a.stages[0].chunks[0].forward)[0]->flops;
  for (const WorkOp* op : steps)
    CHECK(op->flops == Approx(layer / 4).epsilon(1e-12));
  // The layer's last step runs alone (no KV in flight): its kernel at 1,024 keys per query.
  CHECK(gpu_work(*steps[1], p) ==
        Approx(attention_kernel_seconds(*steps[1], 1024, 4096, p)).epsilon(1e-9).margin(2e-12));
  // The whole sequence's ramp (2,048 keys a query) would be shorter.
  CHECK(gpu_work(*steps[1], p) > attention_kernel_seconds(*steps[1], 2048, 4096, p) * 1.02);
  const double T = 2048, q = T * 32 * 128, kv = T * 2 * 32 * 128;
  check_memory_op(fwd, "cp_kv_buffer", 2 * 2 * kv, 1, p);
  check_memory_op(fwd, "cp_out_merge", (4 + 6) * q, 4, p);
  check_memory_op(bwd, "cp_kv_buffer_bwd", 2 * 2 * kv, 1, p);
  check_memory_op(bwd, "cp_grad_merge", (4 + 6) * (q + kv), 6, p);
  CHECK(count_ops(a.stages[0].chunks[0].forward, named("cp_out_merge")) == 0);
}

TEST_CASE("all-to-all CP: one kernel over the whole sequence, the tensors crossing by all-to-all",
          "[workload]") {
  // Llama 3 8B at 8,192 tokens over CP 2, cp_comm_type a2a: each rank attends all 8,192 tokens
  // with 16 of the 32 query heads (4 of 8 key/value heads), so its kernel is the CP 1 kernel's
  // at half the FLOPs; Q, K and V (forward) and dQ, dK and dV (backward) cross by one all-to-all
  // each, the output and its gradient by one more, each copied on both sides (4 bytes a value).
  Case one = make_case("llama3-8b", 1, 1, 8, 8);
  Case a2a = make_case("llama3-8b", 1, 1, 4, 8);
  a2a.plan.cp = 2;
  a2a.plan.cp_comm = CpComm::a2a;
  const Workload a = build(one), w = build(a2a);
  const ComputeProfile p = default_compute_profile(h100());
  const PassProgram& fwd = w.stages[0].chunks[0].forward;
  const PassProgram& bwd = w.stages[0].chunks[0].backward;
  const auto kernels = attention_ops(fwd);
  const auto alone = attention_ops(a.stages[0].chunks[0].forward);
  REQUIRE(kernels.size() == 32);
  REQUIRE(alone.size() == 32);
  CHECK(kernels[0]->flops == Approx(alone[0]->flops / 2).epsilon(1e-12));
  CHECK(gpu_work(*kernels[0], p) ==
        Approx(attention_kernel_seconds(*kernels[0], 4096, 8192, p)).epsilon(1e-9).margin(2e-12));
  // Four all-to-alls over the CP group per layer and pass, no ring send/recv.
  const auto cp = collective_of(GroupKind::cp);
  CHECK(count_ops(fwd, cp) == 4 * 32);
  CHECK(count_ops(bwd, cp) == 4 * 32);
  const auto sendrecv = [](const WorkOp& op) {
    return is_collective(op) && op.op == CollectiveOp::sendrecv;
  };
  CHECK(count_ops(fwd, sendrecv) == 0);
  const double T = 4096, q = T * 32 * 128, kv = T * 8 * 128;
  CHECK(bytes_moved(fwd, cp) == Approx(32 * 2 * (q + 2 * kv + q)).epsilon(1e-12));
  check_memory_op(fwd, "cp_qkv_a2a_copy", 4 * 2 * (q + 2 * kv), 6, p);
  check_memory_op(fwd, "cp_out_a2a_copy", 4 * 2 * q, 2, p);
  check_memory_op(bwd, "cp_dout_a2a_copy", 4 * 2 * q, 2, p);
  check_memory_op(bwd, "cp_dqkv_a2a_copy", 4 * 2 * (q + 2 * kv), 6, p);
  CHECK(count_ops(fwd, named("cp_out_merge")) == 0);
}

TEST_CASE("all-gather CP: two query chunks over the gathered keys, K and V gathered and reduced",
          "[workload]") {
  // Llama 3 8B at 8,192 tokens over CP 4, cp_comm_type all_gather: each rank holds 2,048 tokens
  // in two load-balanced chunks of 1,024 and gathers all 8,192 tokens' K and V; each chunk's
  // kernel takes half the rank's share of the attention FLOPs, its queries attending the keys up
  // to them (on the last rank about half the sequence each, as without CP). K and V are gathered
  // again in backward and their gradients reduce-scattered; around the kernels the gathered
  // chunks are reordered (a read and a write), the output chunks copied, and backward the
  // gradient buffers zeroed, each chunk's dK and dV added over its keys ((2 cp + 1) / (2 cp) of
  // the sequence for the two chunks together), dQ copied out and dK, dV reordered back.
  Case one = make_case("llama3-8b", 1, 1, 8, 8);
  Case ag = make_case("llama3-8b", 1, 1, 2, 8);
  ag.plan.cp = 4;
  ag.plan.cp_comm = CpComm::all_gather;
  Case ring = ag;
  ring.plan.cp_comm = CpComm::p2p;
  const Workload a = build(one), w = build(ag), r = build(ring);
  const ComputeProfile p = default_compute_profile(h100());
  const PassProgram& fwd = w.stages[0].chunks[0].forward;
  const PassProgram& bwd = w.stages[0].chunks[0].backward;
  const auto kernels = attention_ops(fwd);
  const auto alone = attention_ops(a.stages[0].chunks[0].forward);
  REQUIRE(kernels.size() == 2 * 32);
  REQUIRE(alone.size() == 32);
  for (const WorkOp* op : kernels)
    CHECK(op->flops == Approx(alone[0]->flops / 8).epsilon(1e-12));
  CHECK(gpu_work(*kernels[0], p) ==
        Approx(attention_kernel_seconds(*kernels[0], 4096, 8192, p)).epsilon(1e-9).margin(2e-12));
  // The same FLOPs as the ring's four steps, whose kernels attend 1,024 keys a query: faster.
  const auto steps = attention_ops(r.stages[0].chunks[0].forward);
  REQUIRE(steps.size() == 4 * 32);
  CHECK(gpu_work(*kernels[0], p) + gpu_work(*kernels[1], p) <
        gpu_work(*steps[0], p) + gpu_work(*steps[1], p) + gpu_work(*steps[2], p) +
            gpu_work(*steps[3], p));
  // Per layer: forward two all-gathers (K, V); backward two more and two reduce-scatters.
  CHECK(count_ops(fwd, collective_of(GroupKind::cp, CollectiveOp::all_gather)) == 2 * 32);
  CHECK(count_ops(bwd, collective_of(GroupKind::cp, CollectiveOp::all_gather)) == 2 * 32);
  CHECK(count_ops(bwd, collective_of(GroupKind::cp, CollectiveOp::reduce_scatter)) == 2 * 32);
  CHECK(count_ops(fwd, collective_of(GroupKind::cp)) == 2 * 32);
  const double T = 2048, q = T * 32 * 128, kv = T * 8 * 128, gathered = 4 * 2 * kv;
  CHECK(bytes_moved(fwd, collective_of(GroupKind::cp)) == Approx(32 * 2 * gathered).epsilon(1e-12));
  check_memory_op(fwd, "cp_kv_reorder", 2 * 2 * gathered, 2, p);
  check_memory_op(fwd, "cp_out_copy", 2 * 2 * q, 2, p);
  check_memory_op(bwd, "cp_kv_reorder_bwd", 2 * 2 * gathered, 2, p);
  check_memory_op(bwd, "cp_grad_zero", 2 * (gathered + q), 3, p);
  check_memory_op(bwd, "cp_kv_grad_add", 3 * 2 * (9.0 / 8) * gathered, 4, p);
  check_memory_op(bwd, "cp_dq_copy", 2 * 2 * q, 2, p);
  check_memory_op(bwd, "cp_kv_grad_reorder", 2 * 2 * gathered, 2, p);
  CHECK(count_ops(fwd, named("cp_out_merge")) == 0);
  CHECK(count_ops(fwd, named("cp_kv_buffer")) == 0);
}

TEST_CASE("kernel durations come from the compute model plus the gap", "[workload]") {
  // Every kernel costs its modelled time plus the inter-kernel gap, and at least the launch.
  Case c = make_case("llama2-7b", 1, 1, 8, 8);
  c.training.precision = Precision::fp8;
  const Workload w = build(c);
  const ComputeProfile p = default_compute_profile(h100());
  const PassProgram& fwd = w.stages[0].chunks[0].forward;
  const double T = 4096, h = 4096;
  CHECK(find_op(fwd, "embedding").duration.s() ==
        Approx(memory_seconds(h100(), p, 4 * T * h) + p.kernel_gap.s()).epsilon(0).margin(2e-12));
  // A norm streams at kNormForwardShare of an elementwise kernel's rate.
  CHECK(find_op(fwd, "norm").duration.s() ==
        Approx(memory_seconds(h100(), p, 4 * T * h) / kNormForwardShare + p.kernel_gap.s())
            .epsilon(0)
            .margin(2e-12));
  CHECK(find_op(fwd, "qkv").duration.s() ==
        Approx(gemm_seconds(h100(), p, Precision::fp8, T, 3 * h, h, 1,
                            sustained_clock(h100(), p, Precision::fp8)) +
               p.kernel_gap.s())
            .epsilon(0)
            .margin(2e-12));
  CHECK(find_op(fwd, "qkv").flops == 2 * T * 3 * h * h);
  CHECK(find_op(w.stages[0].chunks[0].backward, "norm_bwd").duration.s() ==
        Approx(memory_seconds(h100(), p, 8 * T * h) / kNormBackwardShare + p.kernel_gap.s())
            .epsilon(0)
            .margin(2e-12));
  // Delayed scaling's one scale update per pass moves a few amax histories: a short kernel.
  CHECK(find_op(fwd, "fp8_scale_update").duration < find_op(fwd, "norm").duration);
  double sum = 0;
  for (const WorkOp& op : fwd.ops) {
    if (op.kind != WorkOp::Kind::compute) continue;
    // Every kernel costs at least the gap; what the GPU waits on the host is overhead too.
    CHECK(op.overhead >= p.kernel_gap);
    CHECK(op.duration >= op.overhead);
    sum += op.duration.s();
  }
  CHECK(fwd.compute.s() == Approx(sum).epsilon(1e-12));
  // Adam over the rank's ZeRO-1 shard: ~34 bytes per parameter of HBM traffic.
  const double shard = w.stages[0].dense_params / 8;
  CHECK(
      w.stages[0].optimizer.s() - w.stages[0].weight_quantize.s() ==
      Approx(memory_seconds(h100(), p, 34 * shard) + p.kernel_launch.s()).epsilon(0).margin(2e-12));
}

TEST_CASE("TP collectives appear only with TP > 1", "[workload]") {
  // TP8 with sequence parallelism, per layer: forward all-gathers before qkv and fc1 and
  // reduce-scatters after proj and fc2 (4; with overlap each reduce-scatter is pipelined, its
  // last quarter exposed as a second collective: 6); backward all-gathers for fc2, fc1, proj and
  // qkv dgrad and reduce-scatters after the fc1 and qkv wgrads (6). The embedding reduce-scatters
  // (forward) and all-gathers (backward); the head all-gathers its input and all-reduces the
  // loss statistics (forward) and reduce-scatters its input gradient (backward).
  const Case c8 = make_case("llama2-7b", 8, 1, 1, 4);
  const Workload w8 = build(c8);
  const ChunkWork& chunk = w8.stages[0].chunks[0];
  const int l = c8.model.layers;
  CHECK(count_ops(chunk.forward, collective_of(GroupKind::tp)) == 6 * l + 3);
  CHECK(count_ops(chunk.backward, collective_of(GroupKind::tp)) == 6 * l + 2);
  const double T = 4096, h = 4096;
  for (const PassProgram* p : {&chunk.forward, &chunk.backward}) {
    for (const WorkOp& op : p->ops) {
      if (!is_collective(op)) continue;
      CHECK(op.group == GroupKind::tp);
      if (op.op == CollectiveOp::all_reduce) {
        CHECK(op.bytes.count() == 2 * 4 * T);  // fp32 max and sum per token
      } else {
        CHECK((op.op == CollectiveOp::all_gather || op.op == CollectiveOp::reduce_scatter));
        const double full = T * h * 2;
        if (op.op == CollectiveOp::reduce_scatter && op.bytes.count() != full) {
          CHECK((op.bytes.count() == full * 3 / 4 ||
                 op.bytes.count() == full / 4));  // pipelined halves
        } else {
          CHECK(op.bytes.count() == full);
        }
      }
    }
  }
  // Overlap on: the layers' collectives are started and waited for around their GEMMs.
  CHECK(count_ops(chunk.forward,
                  [](const WorkOp& op) { return op.kind == WorkOp::Kind::comm_start; }) == 4 * l);
  // The overlapped GEMMs run split: fc1 in TP chunks (ring exchange), fc2 in 4 (pipeline).
  for (const WorkOp& op : chunk.forward.ops) {
    if (op.kind != WorkOp::Kind::compute || op.compute != ComputeKind::gemm) continue;
    if (std::string(op.name) == "fc1") CHECK(op.gemm.count == 8);
    if (std::string(op.name) == "fc2") CHECK(op.gemm.count == 4);
    CHECK(op.gemm.m * op.gemm.count == T);
  }
  // Without overlap every collective blocks the compute stream.
  Case blocking = c8;
  blocking.plan.tp_comm_overlap = false;
  const Workload blocking_workload = build(blocking);
  const ChunkWork& b = blocking_workload.stages[0].chunks[0];
  CHECK(count_ops(b.forward, [](const WorkOp& op) { return op.kind == WorkOp::Kind::comm; }) ==
        4 * l + 3);
  // TP1: no collective at all inside the passes.
  const Workload w1 = build(make_case("llama2-7b", 1, 1, 8, 8));
  CHECK(count_ops(w1.stages[0].chunks[0].forward, is_collective) == 0);
  CHECK(count_ops(w1.stages[0].chunks[0].backward, is_collective) == 0);
  CHECK(w1.stages[0].chunks[0].p2p_bytes.count() == T * h * 2);
  CHECK(chunk.p2p_bytes.count() == T * h * 2 / 8);  // sequence-parallel activations are sharded
}

TEST_CASE("MoE with EP > 1 dispatches and combines by all-to-all", "[workload]") {
  // mixtral-8x7b, every layer MoE: forward dispatch + combine, backward the same in reverse.
  // Each all-to-all moves the rank's tokens x top_k x hidden in bf16.
  Case c = make_case("mixtral-8x7b", 1, 1, 8, 8);
  c.training.seq_len = 4096;
  c.plan.ep = 8;
  const Workload w = build(c);
  const ChunkWork& chunk = w.stages[0].chunks[0];
  const int l = c.model.layers;
  CHECK(count_ops(chunk.forward, collective_of(GroupKind::ep)) == 2 * l);
  CHECK(count_ops(chunk.backward, collective_of(GroupKind::ep)) == 2 * l);
  for (const WorkOp& op : chunk.forward.ops) {
    if (!is_collective(op)) continue;
    CHECK(op.op == CollectiveOp::alltoall);
    CHECK(op.bytes.count() == 4096.0 * 2 * 4096 * 2);
  }
  CHECK(count_ops(chunk.forward, collective_of(GroupKind::tp)) == 0);
  // EP1: the experts are local, nothing to exchange.
  c.plan.ep = 1;
  const Workload local = build(c);
  CHECK(count_ops(local.stages[0].chunks[0].forward, is_collective) == 0);
  CHECK(count_ops(local.stages[0].chunks[0].backward, is_collective) == 0);
  // Expert weights: all 8 experts per rank with EP1, one with EP8.
  CHECK(local.stages[0].expert_params == Approx(8 * w.stages[0].expert_params).epsilon(1e-12));
}

TEST_CASE("LoRA reduces and updates only the adapters", "[workload]") {
  Case pre = make_case("llama2-7b", 1, 1, 8, 8);
  Case lora = pre;
  lora.training.task = TrainingTask::lora;
  const Workload wp = build(pre);
  const Workload wl = build(lora);
  CHECK_FALSE(wp.frozen_base);
  CHECK(wl.frozen_base);
  const StageWork& s = wl.stages[0];
  const ChunkWork& c = s.chunks[0];
  // Data-parallel buckets carry the adapters' gradients and nothing of the base weights.
  double dense = 0, expert = 0;
  for (const ChunkWork::Bucket& b : c.buckets) {
    dense += b.dense;
    expert += b.expert;
  }
  CHECK(dense == Approx(s.trainable_params).epsilon(1e-12));
  CHECK(expert == 0);
  CHECK(s.trainable_params > 0);
  CHECK(s.trainable_params < 0.01 * s.dense_params);
  CHECK(s.dense_params == wp.stages[0].dense_params);
  // Pre-training buckets hold every parameter.
  double all = 0;
  for (const ChunkWork::Bucket& b : wp.stages[0].chunks[0].buckets)
    all += b.dense;
  CHECK(all == Approx(wp.stages[0].dense_params).epsilon(1e-12));
  // No weight gradients of the frozen base: no wgrad GEMM in the backward pass.
  const auto wgrad = [](const WorkOp& op) {
    return op.kind == WorkOp::Kind::compute && std::strstr(op.name, "wgrad") != nullptr;
  };
  CHECK(count_ops(c.backward, wgrad) == 0);
  CHECK(count_ops(wp.stages[0].chunks[0].backward, wgrad) > 0);
  // The optimizer walks the adapters only; model FLOPs count forward + dgrad: 2/3 of training.
  CHECK(s.optimizer.s() < 0.05 * wp.stages[0].optimizer.s());
  CHECK(wl.model_flops == Approx(wp.model_flops * 2 / 3).epsilon(1e-12));
}

TEST_CASE("pipeline stages hold their layers, the embedding first and the head last",
          "[workload][pipeline]") {
  Case c = make_case("llama2-7b", 1, 4, 2, 16);
  c.plan.vp = 2;
  const Workload w = build(c);
  REQUIRE(w.stages.size() == 4);
  int layers = 0;
  for (int s = 0; s < 4; ++s) {
    REQUIRE(w.stages[s].chunks.size() == 2);
    for (int chunk = 0; chunk < 2; ++chunk) {
      const ChunkWork& cw = w.stages[s].chunks[chunk];
      const int v = chunk * 4 + s;  // Megatron's interleaved layout
      CHECK(cw.first_layer == 4 * v);
      CHECK(cw.layers == 4);
      CHECK(cw.has_embedding == (v == 0));
      CHECK(cw.has_lm_head == (v == 7));
      layers += cw.layers;
    }
  }
  CHECK(layers == 32);
  // The stage parameters add up to the model's; only the final norm is not held anywhere.
  double params = 0;
  for (const StageWork& s : w.stages)
    params += s.dense_params;
  CHECK(params == Approx(count_parameters(c.model).total).epsilon(1e-6));
}

TEST_CASE("the op-class breakdown adds up to the stage's compute and names each mechanism",
          "[workload]") {
  auto check = [](const Case& c, bool fp8, bool moe) {
    const Workload w = build(c);
    const OpClassSeconds k = op_class_seconds(w, 0);
    double compute = 0;
    for (const ChunkWork& chunk : w.stages[0].chunks)
      compute += (chunk.forward.compute.s() + chunk.backward.compute.s()) * w.microbatches;
    CHECK(k.total() == Approx(compute + w.stages[0].optimizer.s()).epsilon(1e-9));
    CHECK(k.gemm > 0);
    CHECK(k.attention > 0);
    CHECK(k.memory > 0);
    CHECK(k.loss > 0);
    CHECK(k.launch_gaps > 0);
    CHECK((k.fp8 > 0) == fp8);
    CHECK((k.moe_routing > 0) == moe);
  };
  Case dense = make_case("llama3-8b", 1, 1, 8, 64);
  check(dense, false, false);
  dense.training.precision = Precision::fp8;
  check(dense, true, false);
  Case moe = make_case("mixtral-8x7b", 1, 1, 8, 64);
  moe.plan.ep = 8;
  check(moe, false, true);
}

TEST_CASE("the experts' GEMMs run as the software's grouped GEMM", "[workload][moe]") {
  // Qwen3-30B-A3B on EP 8: 16 local experts, 4096 x 8 / 16 = 2048 rows each.
  Case c = make_case("qwen3-30b-a3b", 1, 1, 8, 64);
  c.plan.ep = 8;
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  LoweringOptions streams;
  streams.software.grouped_gemm = GroupedGemmKernel::multi_stream;
  LoweringOptions fused = streams;
  fused.software.grouped_gemm = GroupedGemmKernel::fused;
  const ComputeProfile profile = default_compute_profile(h100());
  const Workload a = build_workload(c.model, c.plan, c.training, h100(), profile, streams);
  const Workload b = build_workload(c.model, c.plan, c.training, h100(), profile, fused);
  auto seconds = [](const Workload& w, std::string_view name) {
    double t = 0;
    for (const WorkOp& op : w.stages[0].chunks[0].forward.ops) {
      if (op.name == name) {
        CHECK(op.gemm.batch == 16);
        CHECK(op.gemm.m == 4096.0 * 8 / 16);
        t += op.duration.s();
      }
    }
    return t;
  };
  for (std::string_view gemm : {"expert_fc1", "expert_fc2"}) {
    INFO(gemm);
    CHECK(seconds(a, gemm) > seconds(b, gemm));
  }
  // Dense layers do not change with the setting.
  Case dense = make_case("llama3-8b", 1, 1, 8, 64);
  validate_plan(dense.plan, dense.training, dense.model, dense.plan.gpus(), "test", "/parallelism");
  CHECK(build_workload(dense.model, dense.plan, dense.training, h100(), profile, streams)
            .stages[0]
            .chunks[0]
            .forward.compute.s() ==
        build_workload(dense.model, dense.plan, dense.training, h100(), profile, fused)
            .stages[0]
            .chunks[0]
            .forward.compute.s());
}

TEST_CASE("the alltoall dispatcher sorts received tokens by local expert and back",
          "[workload][moe]") {
  // Qwen3-30B-A3B on EP 8: 16 local experts; 4096 tokens x top-8 routed per micro-batch.
  Case c = make_case("qwen3-30b-a3b", 1, 1, 8, 64);
  c.plan.ep = 8;
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  const ComputeProfile profile = default_compute_profile(h100());
  auto sorts = [&](const Workload& w, bool backward) {
    return work_of(w, backward, {"permute_local", "unpermute_local"}, profile);
  };
  const Workload w = build(c);
  // One read and one write of every routed token (bf16) per sort, plus the kernel gap.
  const double one =
      memory_seconds(h100(), profile, 2.0 * 2.0 * 4096 * 8 * 2048) + profile.kernel_gap.s();
  for (bool backward : {false, true}) {
    INFO(backward);
    const std::vector<double> s = sorts(w, backward);
    // Two per MoE layer: every one of the 48 layers of the chunk.
    REQUIRE(s.size() == 2 * 48);
    for (double t : s)
      CHECK(t == Approx(one).epsilon(1e-6));  // integer picoseconds
  }
  // Nothing to sort with one local expert (Mixtral's 8 experts on EP 8), without EP, or under
  // DeepEP, which permutes once after its own dispatch.
  Case one_local = make_case("mixtral-8x7b", 1, 1, 8, 64);
  one_local.plan.ep = 8;
  CHECK(sorts(build(one_local), false).empty());
  Case no_ep = c;
  no_ep.plan.ep = 1;
  CHECK(sorts(build(no_ep), false).empty());
  LoweringOptions deepep;
  deepep.software.moe_dispatcher = MoeDispatcher::deepep;
  CHECK(sorts(build_workload(c.model, c.plan, c.training, h100(), profile, deepep), false).empty());
  // Nor under Hybrid-EP, whose dispatches and combines carry their kernel to the communicator.
  LoweringOptions hybrid;
  hybrid.software.moe_dispatcher = MoeDispatcher::hybridep;
  const Workload hw = build_workload(c.model, c.plan, c.training, h100(), profile, hybrid);
  CHECK(sorts(hw, false).empty());
  int flex_ops = 0;
  for (const WorkOp& op : hw.stages[0].chunks[0].forward.ops) {
    if (op.moe.tokens <= 0) continue;
    ++flex_ops;
    CHECK(op.moe.hybridep);
  }
  CHECK(flex_ops == 2 * 48);  // a dispatch and a combine per MoE layer
}

TEST_CASE("quantized experts pad and unpad their rows around the grouped GEMMs",
          "[workload][moe]") {
  // Qwen3-30B-A3B on EP 8 in FP8: 4096 tokens x top-8 routed per micro-batch, 2048 hidden.
  Case c = make_case("qwen3-30b-a3b", 1, 1, 8, 64);
  c.plan.ep = 8;
  c.training.precision = Precision::fp8;
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  const ComputeProfile profile = default_compute_profile(h100());
  auto copies = [&](const Workload& w, bool backward) {
    return work_of(w, backward, {"expert_row_"}, profile);
  };
  // A read and a write of every routed token's bf16 hidden state, plus the kernel gap.
  const double one =
      memory_seconds(h100(), profile, 2.0 * 2.0 * 4096 * 8 * 2048) + profile.kernel_gap.s();
  const Workload w = build(c);
  for (bool backward : {false, true}) {
    INFO(backward);
    const std::vector<double> s = copies(w, backward);
    REQUIRE(s.size() == 2 * 48);  // a pad and an unpad per MoE layer
    for (double t : s)
      CHECK(t == Approx(one).epsilon(1e-6));
  }
  // BF16 experts need no scaling blocks; Hybrid-EP's dispatch pads the counts itself.
  Case bf16 = c;
  bf16.training.precision = Precision::bf16;
  CHECK(copies(build(bf16), false).empty());
  LoweringOptions hybrid;
  hybrid.software.moe_dispatcher = MoeDispatcher::hybridep;
  CHECK(
      copies(build_workload(c.model, c.plan, c.training, h100(), profile, hybrid), false).empty());
  // Buffers padded to a capacity that fills whole blocks (4096 x 8 / 128 = 256 rows per expert)
  // are aligned already; DeepEP's received counts are not.
  Case padded = c;
  padded.model.moe->capacity_factor = 1.0;
  CHECK(copies(build(padded), false).empty());
  LoweringOptions deepep;
  deepep.software.moe_dispatcher = MoeDispatcher::deepep;
  CHECK(
      copies(build_workload(c.model, c.plan, c.training, h100(), profile, deepep), false).size() ==
      2 * 48);
}

TEST_CASE("GPT-OSS's clamped GLU and expert biases run as PyTorch ops beside the grouped GEMMs",
          "[workload][moe]") {
  // gpt-oss-120b on EP 8: 16 local experts; 4096 tokens x top-4 routed per micro-batch, hidden
  // and expert width 2880.
  Case c = make_case("gpt-oss-120b", 1, 1, 8, 64);
  c.plan.ep = 8;
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  REQUIRE(c.model.moe->expert_bias);
  const ComputeProfile profile = default_compute_profile(h100());
  const Workload w = build(c);
  const ChunkWork& chunk = w.stages[0].chunks[0];
  ComputeProfile slow_host = profile;
  slow_host.kernel_launch = sim::Time::from_s(1);
  const Workload slow = build_workload(c.model, c.plan, c.training, h100(), slow_host);
  const double routed = 4096.0 * 4, width = 2880;
  auto bf16_traffic = [&](double bytes) {
    return memory_seconds(h100(), profile, bytes) + profile.kernel_gap.s();
  };
  struct Expected {
    const char* name;
    bool backward;
    double bytes;  // HBM traffic per routed token and hidden (or expert-width) element, bf16
    int kernels;
  };
  // Clamp: two clamps (read, write half each) and a cat (read, write all): 8 accesses of half;
  // backward two clamp gradients (3 accesses each) and a cat (4). Bias: a multiply (write), an
  // add (two reads, a write) and a cat (read, write) per element; backward two products and two
  // reductions (6) and a cat (2). Kernels: 3 per clamp step; per expert 2 (4) plus the cat.
  for (const Expected& e :
       {Expected{"act_clamp", false, 8 * 2.0, 3}, Expected{"act_clamp_bwd", true, 10 * 2.0, 3},
        Expected{"expert_bias", false, 6 * 2.0, 2 * 16 + 1},
        Expected{"expert_bias_bwd", true, 8 * 2.0, 4 * 16 + 1}}) {
    INFO(e.name);
    const PassProgram& pass = e.backward ? chunk.backward : chunk.forward;
    CHECK(count_ops(pass, named(e.name)) == 36);
    const WorkOp& op = find_op(pass, e.name);
    CHECK(gpu_work(op, profile) == Approx(bf16_traffic(e.bytes * routed * width)).epsilon(1e-6));
    // With a host that takes a second per launch the GPU waits for every one of the op's
    // kernels, less the little work it had queued.
    const ChunkWork& slow_chunk = slow.stages[0].chunks[0];
    const WorkOp& slow_op = find_op(e.backward ? slow_chunk.backward : slow_chunk.forward, e.name);
    CHECK(slow_op.overhead.s() > e.kernels - 0.5);
    CHECK(slow_op.overhead.s() < e.kernels + 0.01);
  }
  // Through a flex dispatcher the probabilities are FP32, so is the bias arithmetic: 28 bytes per
  // element forward (a bf16 read and an FP32 write for the product, FP32 sum and cat, the cast
  // back), 40 backward, one more kernel per expert backward and one more cast each way.
  LoweringOptions hybrid;
  hybrid.software.moe_dispatcher = MoeDispatcher::hybridep;
  const Workload h = build_workload(c.model, c.plan, c.training, h100(), profile, hybrid);
  for (const Expected& e : {Expected{"expert_bias", false, 28.0, 2 * 16 + 2},
                            Expected{"expert_bias_bwd", true, 40.0, 5 * 16 + 2}}) {
    INFO(e.name);
    const PassProgram& pass =
        e.backward ? h.stages[0].chunks[0].backward : h.stages[0].chunks[0].forward;
    CHECK(gpu_work(find_op(pass, e.name), profile) ==
          Approx(bf16_traffic(e.bytes * routed * width)).epsilon(1e-6));
  }
  // The fused grouped MLP applies the biases inside its ops: no loop.
  LoweringOptions fused = hybrid;
  fused.software.fused_moe_mlp = true;
  const Workload f = build_workload(c.model, c.plan, c.training, h100(), profile, fused);
  for (const char* name : {"expert_bias", "act_clamp"})
    CHECK(count_ops(f.stages[0].chunks[0].forward, named(name)) == 0);
  // A SwiGLU model without expert biases (Qwen3) has none of them.
  const Workload q = build(make_case("qwen3-30b-a3b", 1, 1, 8, 64));
  for (const char* name : {"act_clamp", "expert_bias"}) {
    CHECK(count_ops(q.stages[0].chunks[0].forward, named(name)) == 0);
  }
  // And taking the biases away removes only their ops' time.
  Case no_bias = c;
  no_bias.model.moe->expert_bias = false;
  const Workload nb = build(no_bias);
  CHECK(count_ops(nb.stages[0].chunks[0].forward, named("expert_bias")) == 0);
  CHECK(nb.stages[0].chunks[0].forward.compute < chunk.forward.compute);
}

TEST_CASE("host issue time: MoE routing kernels show when the host syncs and falls behind",
          "[workload]") {
  Case moe = make_case("mixtral-8x7b", 1, 1, 8, 64);
  moe.plan.ep = 8;
  moe.training.seq_len = 1024;  // short: the GPU work between two syncs is small
  validate_plan(moe.plan, moe.training, moe.model, moe.plan.gpus(), "test", "/parallelism");
  ComputeProfile slow_host = default_compute_profile(h100());
  // A host so slow that the routing kernels of one layer outlast the GPU work queued before the
  // sync: every MoE layer's sync exposes the difference.
  slow_host.kernel_launch = sim::Time::from_us(400);
  LoweringOptions sync;
  sync.software.moe_host_sync = true;
  LoweringOptions no_sync = sync;
  no_sync.software.moe_host_sync = false;
  const Workload a = build_workload(moe.model, moe.plan, moe.training, h100(), slow_host, sync);
  const Workload b = build_workload(moe.model, moe.plan, moe.training, h100(), slow_host, no_sync);
  const PassProgram& fa = a.stages[0].chunks[0].forward;
  const PassProgram& fb = b.stages[0].chunks[0].forward;
  // A sync spends the lead the host built over GPU-heavy layers: never shorter.
  CHECK(host_wait(fa, slow_host) > host_wait(fb, slow_host));
  CHECK(fa.compute > fb.compute);
  // However far ahead it ran, the GPU cannot finish a pass before the host has issued it: every
  // kernel but the first costs the host 400 us.
  CHECK(fb.compute >= slow_host.kernel_launch * (kernel_count(fb) - 1));
  // A fast host never falls behind: its syncs cost nothing.
  ComputeProfile fast_host = default_compute_profile(h100());
  fast_host.kernel_launch = sim::Time::from_ps(1);
  const Workload c = build_workload(moe.model, moe.plan, moe.training, h100(), fast_host, sync);
  const Workload d = build_workload(moe.model, moe.plan, moe.training, h100(), fast_host, no_sync);
  CHECK(c.stages[0].chunks[0].forward.compute - d.stages[0].chunks[0].forward.compute <
        sim::Time::from_ns(1));
}

TEST_CASE("drop-and-pad routing has static shapes: no host sync, and full CUDA graphs capture it",
          "[workload][moe]") {
  Case moe = dropless_ep8();
  REQUIRE(moe.model.moe->capacity_factor == 0);  // the preset is dropless
  ComputeProfile slow_host = default_compute_profile(h100());
  slow_host.kernel_launch = sim::Time::from_us(400);
  LoweringOptions opts;
  opts.software.moe_host_sync = true;
  auto forward_wait = [&](const Case& c, const LoweringOptions& o) {
    const Workload w = build_workload(c.model, c.plan, c.training, h100(), slow_host, o);
    return host_wait(w.stages[0].chunks[0].forward, slow_host);
  };
  Case padded = moe;
  padded.model.moe->capacity_factor = 1.0;  // the same tokens per expert, balanced
  LoweringOptions no_sync = opts;
  no_sync.software.moe_host_sync = false;
  // Padded to capacity, the dispatcher waits for nothing: as if the software never synced.
  CHECK(forward_wait(padded, opts) == forward_wait(moe, no_sync));
  CHECK(forward_wait(padded, opts) < forward_wait(moe, opts));
  // DeepEP's normal kernels wait on the host for the received counts, padded or not.
  LoweringOptions deepep = opts;
  deepep.software.moe_dispatcher = MoeDispatcher::deepep;
  LoweringOptions deepep_no_sync = deepep;
  deepep_no_sync.software.moe_host_sync = false;
  CHECK(forward_wait(padded, deepep) > forward_wait(padded, deepep_no_sync));
  // Full-layer graphs capture the padded MoE block as well: the host replays it.
  LoweringOptions graphs = opts;
  graphs.software.cuda_graphs = CudaGraphs::full;
  LoweringOptions graphs_no_sync = graphs;
  graphs_no_sync.software.moe_host_sync = false;
  CHECK(forward_wait(padded, graphs) < forward_wait(moe, graphs_no_sync));
  CHECK(forward_wait(moe, graphs) > forward_wait(padded, graphs));
}

TEST_CASE("the default host issue time per eager op follows the host CPU", "[workload]") {
  // TransformerEngine #2053: torch.nn.Linear forward, 13.48 us of CPU on a Xeon 8480C, 37.08 us
  // on Grace.
  using topologies::HostCpu;
  CHECK(default_compute_profile(h100(), HostCpu::x86_intel).kernel_launch ==
        sim::Time::from_ps(13'480'000));
  CHECK(default_compute_profile(h100(), HostCpu::x86_amd).kernel_launch ==
        sim::Time::from_ps(13'480'000));
  const topologies::GpuSpec& gb200 = *topologies::find_gpu("GB200");
  const ComputeProfile grace = default_compute_profile(gb200, HostCpu::arm);
  CHECK(grace.kernel_launch == sim::Time::from_ps(37'080'000));
  CHECK(grace.source.find("Grace") != std::string::npos);
  // The same MoE layer on a Grace host issues its routing kernels 2.75x slower, so it can only
  // be as fast or slower.
  Case moe = make_case("mixtral-8x7b", 1, 1, 8, 64);
  moe.plan.ep = 8;
  moe.training.seq_len = 1024;
  LoweringOptions sync;
  sync.software.moe_host_sync = true;
  const Workload x86 = build_workload(moe.model, moe.plan, moe.training, gb200,
                                      default_compute_profile(gb200, HostCpu::x86_intel), sync);
  const Workload arm = build_workload(moe.model, moe.plan, moe.training, gb200, grace, sync);
  CHECK(arm.stages[0].chunks[0].forward.compute > x86.stages[0].chunks[0].forward.compute);
}

TEST_CASE("CUDA graphs remove the host issue time of captured kernels", "[workload]") {
  Case dense = make_case("llama3-8b", 1, 1, 8, 64);
  validate_plan(dense.plan, dense.training, dense.model, dense.plan.gpus(), "test", "/parallelism");
  ComputeProfile p = default_compute_profile(h100());
  p.kernel_launch = sim::Time::from_us(500);  // every small kernel is launch-bound
  LoweringOptions eager;
  eager.software.cuda_graphs = CudaGraphs::none;
  LoweringOptions graphs = eager;
  graphs.software.cuda_graphs = CudaGraphs::full;
  const Workload e = build_workload(dense.model, dense.plan, dense.training, h100(), p, eager);
  const Workload g = build_workload(dense.model, dense.plan, dense.training, h100(), p, graphs);
  const PassProgram& fe = e.stages[0].chunks[0].forward;
  const PassProgram& fg = g.stages[0].chunks[0].forward;
  // Eager, the host issues every kernel at 500 us: the pass cannot end sooner.
  CHECK(fe.compute >= p.kernel_launch * (kernel_count(fe) - 1));
  // A full graph replays its layers' kernels back to back: less waiting on the host.
  CHECK(host_wait(fg, p) < host_wait(fe, p));
  CHECK(fg.compute < fe.compute);
}

TEST_CASE("the software's loss kernel sets the loss's HBM traffic per logit", "[workload]") {
  Case dense = make_case("llama3-8b", 1, 1, 8, 64);
  validate_plan(dense.plan, dense.training, dense.model, dense.plan.gpus(), "test", "/parallelism");
  const ComputeProfile p = default_compute_profile(h100());
  const double logits = static_cast<double>(dense.model.seq_len) * dense.model.vocab;
  for (const auto& [kernel, forward, backward] : {std::tuple{LossKernel::fp32_upcast, 38.0, 14.0},
                                                  std::tuple{LossKernel::megatron_fused, 22.0, 6.0},
                                                  std::tuple{LossKernel::fused, 2.0, 4.0}}) {
    INFO(to_string(kernel));
    LoweringOptions o;
    o.software.loss = kernel;
    const Workload w = build_workload(dense.model, dense.plan, dense.training, h100(), p, o);
    const ChunkWork& c = w.stages[0].chunks[0];
    const double gap = p.kernel_gap.s();
    CHECK(find_op(c.forward, "loss").duration.s() - gap ==
          Approx(memory_seconds(h100(), p, forward * logits)).epsilon(1e-9));
    CHECK(find_op(c.backward, "loss_bwd").duration.s() - gap ==
          Approx(memory_seconds(h100(), p, backward * logits)).epsilon(1e-9));
  }
  CHECK(find_software("llm-foundry")->loss == LossKernel::fused);
  CHECK(default_software().loss == LossKernel::fp32_upcast);
}

TEST_CASE("the software's attention library sets the attention kernels' time", "[workload]") {
  Case dense = make_case("llama3-8b", 1, 1, 8, 64);
  validate_plan(dense.plan, dense.training, dense.model, dense.plan.gpus(), "test", "/parallelism");
  const ComputeProfile p = default_compute_profile(h100());
  LoweringOptions cudnn;
  cudnn.software.attention = AttentionKernel::cudnn;
  LoweringOptions fa2 = cudnn;
  fa2.software.attention = AttentionKernel::flash2;
  const Workload a = build_workload(dense.model, dense.plan, dense.training, h100(), p, cudnn);
  const Workload b = build_workload(dense.model, dense.plan, dense.training, h100(), p, fa2);
  const WorkOp& attn_a = find_op(a.stages[0].chunks[0].forward, "attn");
  const WorkOp& attn_b = find_op(b.stages[0].chunks[0].forward, "attn");
  CHECK((attn_b.duration.s() - attn_b.overhead.s()) ==
        Approx((attn_a.duration.s() - attn_a.overhead.s()) / 0.54).epsilon(1e-9));
  CHECK(find_op(a.stages[0].chunks[0].forward, "qkv").duration.s() ==
        find_op(b.stages[0].chunks[0].forward, "qkv").duration.s());
}

TEST_CASE("eager PyTorch runs a layer's memory-bound ops kernel by kernel, in closed form",
          "[workload]") {
  // Llama 3 8B (RMSNorm, SwiGLU, 32 query and 8 KV heads of 128) on one GPU: T = 8192 tokens.
  Case dense = make_case("llama3-8b", 1, 1, 8, 64);
  validate_plan(dense.plan, dense.training, dense.model, dense.plan.gpus(), "test", "/parallelism");
  const ComputeProfile p = default_compute_profile(h100());
  const double T = dense.model.seq_len, h = 4096, ffn = 14336, q = 32 * 128.0, kv = 8 * 128.0;
  LoweringOptions fused;
  LoweringOptions eager;
  eager.software.eager_elementwise = true;
  const ChunkWork f =
      build_workload(dense.model, dense.plan, dense.training, h100(), p, fused).stages[0].chunks[0];
  const ChunkWork e =
      build_workload(dense.model, dense.plan, dense.training, h100(), p, eager).stages[0].chunks[0];
  const auto check = [&](const PassProgram& pass, std::string_view name, double bytes,
                         int64_t kernels) { check_memory_op(pass, name, bytes, kernels, p); };
  check(e.forward, "norm", 36 * T * h, 7);
  check(e.backward, "norm_bwd", 68 * T * h, 11);
  check(e.forward, "rope", 20 * T * (q + kv), 3);
  check(e.backward, "rope_bwd", 20 * T * (q + kv), 3);
  check(e.forward, "act", 10 * T * ffn, 2);
  check(e.backward, "act_bwd", 18 * T * ffn, 3);
  // Keys and values read once and written four times (32 / 8 heads); the output copied once.
  check(e.forward, "repeat_kv", (2 + 2 * 4) * 2 * T * kv, 1);
  check(e.backward, "repeat_kv_bwd", (2 * 4 + 2) * 2 * T * kv, 1);
  check(e.forward, "attn_layout", 4 * T * q, 1);
  check(e.backward, "attn_layout_bwd", 4 * T * q, 1);
  // The fused stack: one kernel each, bf16 in and out, no copies around the attention.
  check(f.forward, "rope", 4 * T * (q + kv), 1);
  check(f.forward, "act", 6 * T * ffn, 1);
  CHECK(count_ops(f.forward, named("repeat_kv")) == 0);
  CHECK(count_ops(f.forward, named("attn_layout")) == 0);
  // GEMMs and attention are the same kernels either way.
  CHECK(find_op(e.forward, "qkv").duration == find_op(f.forward, "qkv").duration);
  CHECK(find_op(e.backward, "attn_bwd").duration == find_op(f.backward, "attn_bwd").duration);
  // Which stacks run eager: PyTorch-native code without torch.compile.
  CHECK(find_software("torchtitan")->eager_elementwise);
  CHECK(find_software("pytorch-fsdp")->eager_elementwise);
  CHECK_FALSE(default_software().eager_elementwise);
  CHECK_FALSE(find_software("llm-foundry")->eager_elementwise);
}

TEST_CASE("position encodings: what each runs around attention, in closed form", "[workload]") {
  // Llama 3 8B on one GPU, T = 8192 tokens, 32 query and 8 KV heads of 128.
  Case c = make_case("llama3-8b", 1, 1, 8, 64);
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  const ComputeProfile p = default_compute_profile(h100());
  const double T = c.model.seq_len, h = 4096, qk = (32 + 8) * 128.0;
  const auto chunk = [&](PositionEncoding position, bool eager) {
    Case x = c;
    x.model.position = position;
    LoweringOptions o;
    o.software.eager_elementwise = eager;
    return build_workload(x.model, x.plan, x.training, h100(), p, o).stages[0].chunks[0];
  };
  const auto check = [&](const PassProgram& pass, std::string_view name, double bytes,
                         int64_t kernels) { check_memory_op(pass, name, bytes, kernels, p); };
  const ChunkWork rope = chunk(PositionEncoding::rope, false);
  check(rope.forward, "rope", 4 * T * qk, 1);
  check(rope.forward, "embedding", 2 * 2 * T * h, 1);
  check(rope.backward, "embedding_bwd", 2 * 2 * T * h, 1);
  // YaRN under a fused stack: Megatron-Core's PyTorch rotary, bf16, op by op.
  const ChunkWork yarn = chunk(PositionEncoding::yarn, false);
  check(yarn.forward, "rope", 24 * T * qk, 12);
  check(yarn.backward, "rope_bwd", 20 * T * qk, 5);
  // Eager stacks run their own fp32 rotary whichever the variant.
  const ChunkWork eager_yarn = chunk(PositionEncoding::yarn, true);
  check(eager_yarn.forward, "rope", 20 * T * qk, 3);
  // Learned positions: no rotary, a second lookup and the sum at the embedding.
  const ChunkWork learned = chunk(PositionEncoding::learned, false);
  CHECK(count_ops(learned.forward, named("rope")) == 0);
  CHECK(count_ops(learned.backward, named("rope_bwd")) == 0);
  check(learned.forward, "embedding", 5 * 2 * T * h, 1);
  check(learned.backward, "embedding_bwd", 4 * 2 * T * h, 1);
  // ALiBi: the bias is the attention kernel's; nothing else changes.
  const ChunkWork alibi = chunk(PositionEncoding::alibi, false);
  CHECK(count_ops(alibi.forward, named("rope")) == 0);
  CHECK(alibi.forward.compute < rope.forward.compute);
  CHECK(count_ops(alibi.forward, [](const WorkOp&) { return true; }) ==
        count_ops(rope.forward, [](const WorkOp&) { return true; }) - 32);
  CHECK(find_op(alibi.forward, "attn").duration == find_op(rope.forward, "attn").duration);
  // MLA rotates only its rope dimensions: every query head's and the one shared key head's.
  Case mla = make_case("deepseek-v3", 1, 1, 64, 64);
  mla.model.layers = 4;
  mla.model.moe->dense_layers = 4;
  mla.model.mtp_layers = 0;
  validate_plan(mla.plan, mla.training, mla.model, mla.plan.gpus(), "test", "/parallelism");
  const ChunkWork m =
      build_workload(mla.model, mla.plan, mla.training, h100(), p).stages[0].chunks[0];
  check(m.forward, "rope", 4 * mla.model.seq_len * (128 + 1) * 64.0, 1);
  // Which models rotate how.
  CHECK(find_model("llama3-8b")->position == PositionEncoding::rope);
  CHECK(find_model("gpt-oss-120b")->position == PositionEncoding::yarn);
  CHECK(find_model("gpt3-175b")->position == PositionEncoding::learned);
  CHECK(find_model("megatron-1.7b")->position == PositionEncoding::learned);
  CHECK(find_model("nemotron-4-340b")->position == PositionEncoding::rope);
}

TEST_CASE("MoE load imbalance: the most loaded rank's experts and all-to-alls grow with it",
          "[workload]") {
  // mixtral is dropless (capacity factor 0): the simulated rank is the most loaded one.
  Case c = make_case("mixtral-8x7b", 1, 1, 8, 8);
  c.training.seq_len = 4096;
  c.plan.ep = 8;
  const Workload balanced = build(c);
  c.model.moe->load_imbalance = 1.5;
  const Workload skewed = build(c);
  const PassProgram& b = balanced.stages[0].chunks[0].forward;
  const PassProgram& s = skewed.stages[0].chunks[0].forward;
  CHECK(find_op(s, "expert_fc1").flops == Approx(1.5 * find_op(b, "expert_fc1").flops));
  CHECK(find_op(s, "expert_fc2").flops == Approx(1.5 * find_op(b, "expert_fc2").flops));
  for (size_t i = 0; i < s.ops.size(); ++i) {
    if (is_collective(s.ops[i]))
      CHECK(s.ops[i].bytes.count() == Approx(1.5 * b.ops[i].bytes.count()));
  }
  // The router and attention see every token of the rank, balanced or not.
  CHECK(find_op(s, "router").flops == find_op(b, "router").flops);
  // With a capacity factor the buffers hold capacity x the mean whatever the routing.
  c.model.moe->capacity_factor = 1.25;
  const Workload capped = build(c);
  c.model.moe->load_imbalance = 1.0;
  const Workload capped_balanced = build(c);
  CHECK(find_op(capped.stages[0].chunks[0].forward, "expert_fc1").flops ==
        find_op(capped_balanced.stages[0].chunks[0].forward, "expert_fc1").flops);
  CHECK(find_op(capped.stages[0].chunks[0].forward, "expert_fc1").flops ==
        Approx(1.25 * find_op(b, "expert_fc1").flops));
}

namespace {

/// HBM bytes the recipe's quantization kernels of a pass move (their work back into bytes).
double quantize_bytes(const PassProgram& p, const topologies::GpuSpec& gpu,
                      const ComputeProfile& profile) {
  double work = 0;
  for (const WorkOp& op : p.ops) {
    const std::string_view name = op.name;
    if (op.kind == WorkOp::Kind::compute && (name.starts_with("cast") || name.starts_with("fp8_")))
      work += op.duration.s() - op.overhead.s();
  }
  return work * profile.sustained_efficiency / memory_seconds(gpu, profile, 1.0);
}

/// A non-MLA FP8 attention kernel of one direction and scaling, for fp8_attention_speedup.
FlashAttention fp8_kernel(bool backward, bool block_scaled) {
  FlashAttention a;
  a.backward = backward;
  a.block_scaled = block_scaled;
  return a;
}

std::vector<const WorkOp*> ops_named(const PassProgram& p, std::string_view name) {
  std::vector<const WorkOp*> out;
  for (const WorkOp& op : p.ops) {
    if (op.kind == WorkOp::Kind::compute && name == op.name) out.push_back(&op);
  }
  return out;
}

Workload build_with(const Case& c, const SoftwareStack& stack, const topologies::GpuSpec& gpu) {
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  LoweringOptions o;
  o.software = stack;
  return build_workload(c.model, c.plan, c.training, gpu, default_compute_profile(gpu), o);
}

}  // namespace

TEST_CASE("each FP8 recipe's quantization bytes on Llama 2 7B, in closed form", "[workload]") {
  // llama2-7b, TP1, one sequence of 4096: T = 4096, h = 4096, FFN 11008 (SwiGLU), 32 layers.
  // Forward per layer: qkv reads the input norm's output (a TE LayerNormLinear), proj the
  // attention output, fc1 the MLP norm's output, fc2 the activation. Backward: the output
  // gradients of fc2 (T h), fc1 (T 2 FFN), proj (T h) and qkv (T 3h), all standalone.
  Case c = make_case("llama2-7b", 1, 1, 8, 8);
  c.training.precision = Precision::fp8;
  const ComputeProfile p = default_compute_profile(h100());
  const double T = 4096, h = 4096, f = 11008, L = 32, tensors = 4 * L;
  const double bwd_elements = T * (h + 2 * f + h + 3 * h);
  auto passes = [&](const Workload& w) {
    const ChunkWork& chunk = w.stages[0].chunks[0];
    return std::pair{quantize_bytes(chunk.forward, h100(), p),
                     quantize_bytes(chunk.backward, h100(), p)};
  };
  SECTION(
      "delayed (the default stack): transposes of the norms' FP8 outputs, cast+transpose "
      "elsewhere, one amax-history update per pass") {
    const auto [fwd, bwd] = passes(build(c));
    const double update = 2 * 4 * 1024 * tensors;
    CHECK(fwd == Approx(L * (2 * T * h + 4 * T * h + 2 * T * h + 4 * T * f) + update));
    CHECK(bwd == Approx(L * 4 * bwd_elements + update));
  }
  SECTION("current (Megatron-Bridge): an amax pass on standalone inputs, a scale kernel each") {
    const auto [fwd, bwd] = passes(build_with(c, *find_software("megatron-bridge-25.09"), h100()));
    const double scales = 12 * tensors;
    CHECK(fwd == Approx(L * (4 * T * h + 6 * T * h + 4 * T * h + 6 * T * f) + scales));
    CHECK(bwd == Approx(L * 6 * bwd_elements + scales));
  }
  SECTION("blockwise (fp8_blockwise): both copies of every input from BF16, FP32 tile scales") {
    c.training.fp8_blockwise = true;
    const auto [fwd, bwd] = passes(build(c));
    const double per = 2 + 2 * (1 + 4.0 / 128);
    CHECK(fwd == Approx(L * per * T * (3 * h + f)));
    CHECK(bwd == Approx(L * per * bwd_elements));
  }
  SECTION("LoRA (frozen base): no transposed copies, so the norms' FP8 outputs cost nothing") {
    c.training.task = TrainingTask::lora;
    const auto [fwd, bwd] = passes(build(c));
    const double update = 2 * 4 * 1024 * tensors;
    CHECK(fwd == Approx(L * (3 * T * h + 3 * T * f) + update));
    CHECK(bwd == Approx(L * 3 * bwd_elements + update));
  }
  SECTION("LoRA on FP8 parameters without a transpose cache: each backward transposes them") {
    // NVIDIA's MLPerf LoRA code of 2024 (disable_parameter_transpose_cache): qkv (h x 3h),
    // proj (h x h), fc1 (h x 2f) and fc2 (f x h) transposed before their dgrad, a byte read and
    // a byte written per weight; nothing on Blackwell, which reads FP8 in either layout.
    c.training.task = TrainingTask::lora;
    SoftwareStack stack = default_software();
    stack.fp8_params = true;
    const double weights = L * (4 * h * h + 3 * h * f);
    const double cached = passes(build_with(c, stack, h100())).second;
    stack.parameter_transpose_cache = false;
    const Workload w = build_with(c, stack, h100());
    CHECK(passes(w).second == Approx(cached + 2 * weights));
    CHECK(count_ops(w.stages[0].chunks[0].backward, named("fp8_weight_transpose")) == 4 * L);
    CHECK(
        count_ops(build_with(c, stack, *topologies::find_gpu("B200")).stages[0].chunks[0].backward,
                  named("fp8_weight_transpose")) == 0);
    // Nothing in BF16.
    c.training.precision = Precision::bf16;
    CHECK(count_ops(build_with(c, stack, h100()).stages[0].chunks[0].backward,
                    named("fp8_weight_transpose")) == 0);
  }
  SECTION("weights are cast once per step: 4 bytes each, one kernel per weight tensor") {
    const Workload w = build(c);
    const double weights = L * (4 * h * h + 3 * h * f);
    CHECK(w.stages[0].weight_quantize.s() ==
          Approx(memory_seconds(h100(), p, 4 * weights) + tensors * p.kernel_launch.s()));
    // Without a transpose cache the step's cast writes the rowwise copy alone: 3 bytes each.
    SoftwareStack stack = default_software();
    stack.fp8_params = true;
    stack.parameter_transpose_cache = false;
    CHECK(build_with(c, stack, h100()).stages[0].weight_quantize.s() ==
          Approx(memory_seconds(h100(), p, 3 * weights) + tensors * p.kernel_launch.s()));
    CHECK(op_class_seconds(w, 0).optimizer ==
          Approx(w.stages[0].optimizer.s() - w.stages[0].weight_quantize.s()));
  }
}

TEST_CASE("sequence-parallel inputs are quantized on the shard and gathered in low precision",
          "[workload]") {
  // llama2-7b at TP4 with sequence parallelism, current scaling (Megatron-Bridge): T = 4096
  // gathered rows, shards of T / 4; h = 4096, local FFN 2752, local q heads 8 (proj input 1024,
  // qkv output (8 + 2 x 8) x 128 = 3072).
  Case c = make_case("llama2-7b", 4, 1, 2, 8);
  c.plan.sequence_parallel = true;
  c.plan.tp_comm_overlap = false;  // no SM contention: each op's work is its bytes
  c.training.precision = Precision::fp8;
  const SoftwareStack& mb = *find_software("megatron-bridge-25.09");
  const Workload w = build_with(c, mb, h100());
  const ComputeProfile p = default_compute_profile(h100());
  const double T = 4096, h = 4096, f = 2752, L = 32, tensors = 4 * L, scale = 12;
  const ChunkWork& chunk = w.stages[0].chunks[0];
  // Forward: qkv and fc1 inputs (norm outputs, gathered): scale + rowwise cast on the shard, the
  // transpose on the gathered tensor; proj and fc2 inputs (local): amax + scale + cast+transpose.
  const double gathered_norm = 3 * T * h / 4 + 2 * T * h;
  CHECK(quantize_bytes(chunk.forward, h100(), p) ==
        Approx(L * (2 * gathered_norm + 6 * T * 1024 + 6 * T * f) + tensors * scale));
  // Backward: the fc2 and proj output gradients are gathered (amax + scale + rowwise cast on
  // the shard, transpose after), fc1's and qkv's are local.
  const double gathered_grad = 5 * T * h / 4 + 2 * T * h;
  CHECK(quantize_bytes(chunk.backward, h100(), p) ==
        Approx(L * (2 * gathered_grad + 6 * T * 2 * f + 6 * T * 3072) + tensors * scale));
  // Every TP all-gather of a layer carries FP8 (1 byte per element) where BF16 carries 2 (2 per
  // layer forward, 4 backward with the regathers for the weight gradients); the LM head's and the
  // embedding's gathers and the reduce-scatters of the GEMM outputs stay BF16.
  Case bf = c;
  bf.training.precision = Precision::bf16;
  const Workload wb = build_with(bf, mb, h100());
  for (const auto pass : {&ChunkWork::forward, &ChunkWork::backward}) {
    const PassProgram& q = chunk.*pass;
    const PassProgram& r = wb.stages[0].chunks[0].*pass;
    std::vector<double> fp8, bf16;
    auto collect = [](const PassProgram& prog, CollectiveOp op, std::vector<double>& out) {
      for (const WorkOp& o : prog.ops)
        if (is_collective(o) && o.group == GroupKind::tp && o.op == op)
          out.push_back(o.bytes.count());
    };
    collect(q, CollectiveOp::all_gather, fp8);
    collect(r, CollectiveOp::all_gather, bf16);
    REQUIRE(fp8.size() == bf16.size());
    const size_t layer_gathers = pass == &ChunkWork::forward ? 2 * 32 : 4 * 32;
    REQUIRE(fp8.size() == layer_gathers + 1);
    for (size_t i = 0; i < layer_gathers; ++i)
      CHECK(fp8[i] == 0.5 * bf16[i]);
    CHECK(fp8.back() == bf16.back());
    fp8.clear();
    bf16.clear();
    collect(q, CollectiveOp::reduce_scatter, fp8);
    collect(r, CollectiveOp::reduce_scatter, bf16);
    CHECK(fp8 == bf16);
  }
  // Current scaling shares one scale across the shards: each gathered input all-reduces its
  // shard's amax over TP first (qkv and fc1 forward; fc2 and proj output gradients backward).
  auto amax_reductions = [](const PassProgram& prog) {
    return count_ops(prog, [](const WorkOp& o) {
      return is_collective(o) && o.group == GroupKind::tp && o.op == CollectiveOp::all_reduce &&
             o.bytes.count() < 16;
    });
  };
  CHECK(amax_reductions(chunk.forward) == 2 * 32);
  CHECK(amax_reductions(chunk.backward) == 2 * 32);
  CHECK(amax_reductions(build(c).stages[0].chunks[0].forward) == 0);  // delayed: none
  // Blockwise gathers its 1x128 FP8 copy with one FP32 scale per tile.
  c.training.fp8_blockwise = true;
  const Workload wbw = build_with(c, mb, h100());
  CHECK(amax_reductions(wbw.stages[0].chunks[0].forward) == 0);  // local block scales
  for (const WorkOp& o : wbw.stages[0].chunks[0].forward.ops) {
    if (is_collective(o) && o.op == CollectiveOp::all_gather && o.bytes.count() < 2 * T * h)
      CHECK(o.bytes.count() == Approx(T * h * (1 + 4.0 / 128)));
  }
  CHECK(count_ops(wbw.stages[0].chunks[0].forward, [&](const WorkOp& o) {
          return is_collective(o) && o.op == CollectiveOp::all_gather &&
                 o.bytes.count() < 2 * T * h;
        }) == 2 * 32);
}

TEST_CASE("fp8_blockwise changes the step, the recipe's cost showing in fp8_overhead_s",
          "[workload]") {
  Case c = make_case("llama3-8b", 1, 1, 8, 64);
  c.training.precision = Precision::fp8;
  const Workload delayed = build(c);
  const Workload current = build_with(c, *find_software("megatron-bridge-25.09"), h100());
  c.training.fp8_blockwise = true;
  const Workload blockwise = build(c);
  const double d = op_class_seconds(delayed, 0).fp8;
  const double cs = op_class_seconds(current, 0).fp8;
  const double bw = op_class_seconds(blockwise, 0).fp8;
  CHECK(bw != Approx(d).epsilon(0.01));
  CHECK(blockwise.stages[0].chunks[0].forward.compute.s() !=
        delayed.stages[0].chunks[0].forward.compute.s());
  // Current scaling reads every standalone input once more and launches two more kernels per
  // tensor than delayed scaling; blockwise needs no amax pass.
  CHECK(cs > bw);
  CHECK(cs > d);
  // The same GEMMs run in every recipe.
  CHECK(op_class_seconds(delayed, 0).gemm == Approx(op_class_seconds(blockwise, 0).gemm));
}

TEST_CASE("a BF16 run is unchanged bit for bit by the FP8 recipe settings", "[workload]") {
  Case c = make_case("mixtral-8x7b", 1, 1, 8, 64);
  c.plan.ep = 8;
  const Workload base = build(c);
  SoftwareStack other = default_software();
  other.fp8_current_scaling = true;
  other.nvfp4_bf16_first = 0.5;
  other.nvfp4_bf16_last = 0.5;
  c.training.fp8_blockwise = true;
  const Workload changed = build_with(c, other, h100());
  const StageWork& a = base.stages[0];
  const StageWork& b = changed.stages[0];
  CHECK(a.optimizer.s() == b.optimizer.s());
  CHECK(a.weight_quantize.s() == 0);
  for (const auto pass : {&ChunkWork::forward, &ChunkWork::backward}) {
    const PassProgram& x = a.chunks[0].*pass;
    const PassProgram& y = b.chunks[0].*pass;
    REQUIRE(x.ops.size() == y.ops.size());
    CHECK(x.compute.s() == y.compute.s());
    for (size_t i = 0; i < x.ops.size(); ++i) {
      CHECK(x.ops[i].duration.s() == y.ops[i].duration.s());
      const std::string_view name = x.ops[i].name;
      CHECK_FALSE((name.starts_with("cast") || name.starts_with("fp8_")));
    }
  }
}

TEST_CASE("GEMMs kept in BF16 are priced at the BF16 rate", "[workload]") {
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  const ComputeProfile p = default_compute_profile(b200);
  // NVFP4 with the paper's recipe (SoftwareStack's defaults) on 32 layers: layer 0 and layers
  // 28-31 stay BF16.
  Case c = make_case("llama2-7b", 1, 1, 8, 8);
  c.training.precision = Precision::nvfp4;
  SoftwareStack with_paper = default_software();
  with_paper.nvfp4_bf16_first = SoftwareStack{}.nvfp4_bf16_first;
  with_paper.nvfp4_bf16_last = SoftwareStack{}.nvfp4_bf16_last;
  const Workload w = build_with(c, with_paper, b200);
  const PassProgram& fwd = w.stages[0].chunks[0].forward;
  const std::vector<const WorkOp*> qkv = ops_named(fwd, "qkv");
  REQUIRE(qkv.size() == 32);
  const double T = 4096, h = 4096;
  for (int layer : {0, 28, 31}) {
    CHECK(qkv[layer]->gemm.precision == Precision::bf16);
    // At the B200's sustained bf16 clock (its default fit's ceiling is above 1429 TFLOP/s).
    const double clock = sustained_clock(b200, p, Precision::bf16);
    CHECK(clock < 1.0);
    CHECK(qkv[layer]->duration.s() - qkv[layer]->overhead.s() + p.kernel_gap.s() ==
          Approx(gemm_seconds(b200, p, Precision::bf16, T, 3 * h, h, 1, clock) + p.kernel_gap.s()));
  }
  for (int layer : {1, 27}) {
    CHECK(qkv[layer]->gemm.precision == Precision::nvfp4);
    // At the power-limited share of the FP4 fit (no sustained FP4 figure: FP8's).
    const double clock = sustained_clock(b200, p, Precision::nvfp4);
    CHECK(clock == Approx(kPowerLimitedShareFp8));
    CHECK(
        qkv[layer]->duration.s() - qkv[layer]->overhead.s() + p.kernel_gap.s() ==
        Approx(gemm_seconds(b200, p, Precision::nvfp4, T, 3 * h, h, 1, clock) + p.kernel_gap.s()));
  }
  // Only the 27 quantized layers quantize their 4 inputs (3 kernels each, TE's RHT path).
  CHECK(ops_named(fwd, "cast_nvfp4_rht").size() == 27 * 4);
  // The output layer stays BF16 in every recipe; so do the MoE router and the attention BMMs.
  CHECK(find_op(fwd, "lm_head").gemm.precision == Precision::bf16);
  Case moe = make_case("mixtral-8x7b", 1, 1, 8, 64);
  moe.plan.ep = 8;
  moe.training.precision = Precision::fp8;
  moe.training.unfused_attention = true;
  const Workload m = build(moe);
  CHECK(find_op(m.stages[0].chunks[0].forward, "router").gemm.precision == Precision::bf16);
  CHECK(find_op(m.stages[0].chunks[0].forward, "attn_scores").gemm.precision == Precision::bf16);
  CHECK(find_op(m.stages[0].chunks[0].forward, "expert_fc1").gemm.precision == Precision::fp8);
}

TEST_CASE(
    "GEMMs and attention run at their precision's sustained clock, memory-bound work does not",
    "[workload]") {
  // The same H100 with and without measured sustained matmul rates, with burst-level fits (0.845
  // of the bf16 peak and 0.703 of the fp8 peak, as the built-in H100 profile).
  topologies::GpuSpec plain = h100();
  plain.sustained_bf16_tflops = 0;
  plain.sustained_fp8_tflops = 0;
  ComputeProfile p = default_compute_profile(h100());
  p.gemm_for(Precision::bf16).max_efficiency = 0.845;
  p.gemm_for(Precision::fp8).max_efficiency = 0.703;
  const double clock = sustained_clock(h100(), p, Precision::bf16);
  const double fp8_clock = sustained_clock(h100(), p, Precision::fp8);
  // Closed forms: the sustained rate over the fit's best-shape rate.
  CHECK(clock == Approx(h100().sustained_bf16_tflops / (989.4 * 0.845)));
  CHECK(fp8_clock == Approx(h100().sustained_fp8_tflops / (1978.9 * 0.703)));
  REQUIRE(clock < 0.95);
  REQUIRE(fp8_clock < 0.95);
  CHECK(sustained_clock(plain, p, Precision::fp8) == 1);
  CHECK(sustained_clock(h100(), p, Precision::tf32) == 1);
  for (Precision precision : {Precision::bf16, Precision::fp8}) {
    INFO(topologies::to_string(precision));
    Case c = make_case("llama2-7b", 1, 1, 8, 8);
    c.training.precision = precision;
    const Workload sustained = build_workload(c.model, c.plan, c.training, h100(), p);
    const Workload burst = build_workload(c.model, c.plan, c.training, plain, p);
    const PassProgram& s = sustained.stages[0].chunks[0].forward;
    const PassProgram& b = burst.stages[0].chunks[0].forward;
    const auto work = [](const WorkOp& op) { return op.duration.s() - op.overhead.s(); };
    // Attention is bf16 in every recipe; the LM head stays bf16 too.
    CHECK(work(find_op(s, "attn")) ==
          Approx(work(find_op(b, "attn")) / clock).epsilon(0).margin(2e-12));
    const double launch = p.gemm_for(Precision::bf16).launch.s();
    CHECK(work(find_op(s, "lm_head")) - launch ==
          Approx((work(find_op(b, "lm_head")) - launch) / clock).epsilon(1e-9));
    const double qkv = precision == Precision::bf16 ? clock : fp8_clock;
    const double qkv_launch = p.gemm_for(precision).launch.s();
    CHECK(work(find_op(s, "qkv")) - qkv_launch ==
          Approx((work(find_op(b, "qkv")) - qkv_launch) / qkv).epsilon(1e-9).margin(2e-12));
    CHECK(find_op(s, "norm").duration.s() == find_op(b, "norm").duration.s());
  }
}

TEST_CASE(
    "FSDP2 copies each gathered bucket out and each gradient bucket in, on the compute stream",
    "[workload]") {
  Case c = make_case("llama3-8b", 1, 1, 8, 64);
  c.plan.zero = 3;
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  const ComputeProfile p = default_compute_profile(h100());
  const auto copies = [&](FsdpImpl impl, int zero, std::string_view name, bool backward) {
    LoweringOptions o;
    o.software.fsdp = impl;
    ParallelPlan plan = c.plan;
    plan.zero = zero;
    const Workload w = build_workload(c.model, plan, c.training, h100(), p, o);
    const ChunkWork& chunk = w.stages[0].chunks[0];
    double seconds = 0;
    int n = 0;
    for (const WorkOp& op : (backward ? chunk.backward : chunk.forward).ops) {
      if (op.kind == WorkOp::Kind::compute && name == op.name) {
        seconds += op.duration.s() - p.kernel_gap.s();
        ++n;
      }
    }
    return std::pair{seconds, n};
  };
  // One bucket per layer, the embedding's and the head's with the first and the last layer.
  const Workload w = build_workload(c.model, c.plan, c.training, h100(), p);
  const ChunkWork& chunk = w.stages[0].chunks[0];
  double gathered = 0;
  for (const ChunkWork::Bucket& b : chunk.buckets)
    gathered += b.dense + b.expert;
  const size_t buckets = chunk.buckets.size();
  REQUIRE(buckets == static_cast<size_t>(c.model.layers));
  for (const auto& [name, backward, bytes_per_param] :
       {std::tuple{"fsdp_copy_out", false, 2.0 * w.param_bytes},
        std::tuple{"fsdp_copy_out", true, 2.0 * w.param_bytes},
        std::tuple{"fsdp_copy_in", true, 2.0 * w.grad_bytes}}) {
    INFO(name << (backward ? " backward" : " forward"));
    const auto [seconds, n] = copies(FsdpImpl::pytorch_fsdp2, 3, name, backward);
    CHECK(n == static_cast<int>(buckets));
    // Memory-bound time is linear in bytes: the sum over buckets is the time of all their bytes.
    CHECK(
        seconds ==
        Approx(memory_seconds(h100(), p, bytes_per_param * gathered)).epsilon(0).margin(1e-12 * n));
    // FSDP1 gathers into the flat parameter itself; without ZeRO-3 nothing is gathered.
    CHECK(copies(FsdpImpl::pytorch_fsdp1, 3, name, backward).second == 0);
    CHECK(copies(FsdpImpl::pytorch_fsdp2, 1, name, backward).second == 0);
  }
  CHECK(find_software("nemo-automodel")->fsdp == FsdpImpl::pytorch_fsdp2);
}

TEST_CASE("GroupedLinear quantizes expert by expert, and block-scaled GEMMs swizzle their scales",
          "[workload][moe]") {
  // qwen3-30b-a3b on EP 8: 16 local experts. A host that takes a second per launch makes each
  // op's overhead its kernel count.
  Case c = make_case("qwen3-30b-a3b", 1, 1, 8, 64);
  c.plan.ep = 8;
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  ComputeProfile slow_host = default_compute_profile(b200);
  slow_host.kernel_launch = sim::Time::from_s(1);
  auto forward = [&](Precision p, const SoftwareStack& stack) {
    Case run = c;
    run.training.precision = p;
    LoweringOptions o;
    o.software = stack;
    return build_workload(run.model, run.plan, run.training, b200, slow_host, o)
        .stages[0]
        .chunks[0]
        .forward;
  };
  // The `back`-th op before the first op named `name`.
  auto before = [](const PassProgram& pass, std::string_view name, size_t back) -> const WorkOp& {
    for (size_t i = back; i < pass.ops.size(); ++i) {
      if (pass.ops[i].name == name) return pass.ops[i - back];
    }
    FAIL("no " << name);
    return pass.ops.front();
  };
  // The ops just before the first expert GEMM (fc1): quantize ... [swizzle], fc1.
  auto before_fc1 = [&](const PassProgram& pass, size_t back) -> const WorkOp& {
    return before(pass, "expert_fc1", back);
  };
  auto launches = [](const WorkOp& op) { return std::lround(op.overhead.s()); };
  const SoftwareStack bridge = *find_software("megatron-bridge-25.11");
  // MXFP8: one cast kernel per expert's split, then one multi-tensor swizzle per operand list.
  const PassProgram mx = forward(Precision::mxfp8, bridge);
  CHECK(std::string_view(before_fc1(mx, 1).name) == "scale_swizzle");
  CHECK(launches(before_fc1(mx, 1)) == 2);
  CHECK(std::string_view(before_fc1(mx, 2).name) == "cast_mxfp8");
  CHECK(launches(before_fc1(mx, 2)) == 16);
  // Per-tensor current scaling: amax, scale and cast per split (one copy on Blackwell, which
  // needs no transpose), no swizzle.
  const PassProgram cs = forward(Precision::fp8, bridge);
  CHECK(std::string_view(before_fc1(cs, 1).name) == "fp8_cast");
  CHECK(launches(before_fc1(cs, 1)) == 16);
  CHECK(std::string_view(before_fc1(cs, 3).name) == "fp8_amax");
  CHECK(launches(before_fc1(cs, 3)) == 16);
  CHECK(count_ops(cs, named("scale_swizzle")) == 0);
  // Delayed scaling has TE's fused multi-tensor cast+transpose: one kernel for every split.
  SoftwareStack delayed = bridge;
  delayed.fp8_current_scaling = false;
  CHECK(launches(before_fc1(forward(Precision::fp8, delayed), 1)) == 1);
  // A fused grouped GEMM kernel takes the routed tokens as one tensor.
  SoftwareStack fused = bridge;
  fused.grouped_gemm = GroupedGemmKernel::fused;
  CHECK(launches(before_fc1(forward(Precision::mxfp8, fused), 2)) == 1);
  // Every MXFP8 GEMM swizzles (the dense attention projections too: two launches each); BF16
  // none.
  CHECK(std::string_view(before(mx, "qkv", 1).name) == "scale_swizzle");
  CHECK(count_ops(forward(Precision::bf16, bridge), named("scale_swizzle")) == 0);
}

TEST_CASE("graphs over the MoE router replay its kernels without host launches",
          "[workload][moe]") {
  Case c = make_case("qwen3-30b-a3b", 1, 1, 8, 64);
  c.plan.ep = 8;
  validate_plan(c.plan, c.training, c.model, c.plan.gpus(), "test", "/parallelism");
  ComputeProfile slow_host = default_compute_profile(h100());
  slow_host.kernel_launch = sim::Time::from_s(1);
  auto op = [&](bool graphed, bool backward, const char* name) {
    LoweringOptions o;
    o.software.graph_moe_router = graphed;
    const Workload w = build_workload(c.model, c.plan, c.training, h100(), slow_host, o);
    const ChunkWork& chunk = w.stages[0].chunks[0];
    return std::lround(find_op(backward ? chunk.backward : chunk.forward, name).overhead.s());
  };
  // Eager: the router's and the permutation's kernels each cost a launch, forward and backward.
  CHECK(op(false, false, "router") >= 15);
  CHECK(op(false, true, "permute_bwd") >= 22);
  // Graphed: at most the wait for the eager op issued before the graph.
  CHECK(op(true, false, "router") <= 1);
  CHECK(op(true, false, "permute") == 0);
  CHECK(op(true, true, "permute_bwd") <= 1);
  CHECK(op(true, true, "router_dgrad") == 0);
  // The experts stay eager: after the dropless dispatcher's host sync the host launches each.
  CHECK(op(true, false, "expert_fc1") >= 15);
}

TEST_CASE("the fused MoE MLP: no activation pass, no host sync, graphable when dropless",
          "[workload][moe]") {
  Case moe = dropless_ep8();
  REQUIRE(moe.model.moe->capacity_factor == 0);  // dropless
  ComputeProfile slow_host = default_compute_profile(h100());
  slow_host.kernel_launch = sim::Time::from_us(400);
  auto forward = [&](const LoweringOptions& o) {
    return build_workload(moe.model, moe.plan, moe.training, h100(), slow_host, o)
        .stages[0]
        .chunks[0]
        .forward;
  };
  LoweringOptions plain;
  plain.software.grouped_gemm = GroupedGemmKernel::fused;
  LoweringOptions fused = plain;
  fused.software.fused_moe_mlp = true;
  // The GLU activation runs in FC1's epilogue: the forward loses its activation pass.
  CHECK(count_ops(forward(plain), named("act")) == moe.model.layers);
  CHECK(count_ops(forward(fused), named("act")) == 0);
  // Sync-free: the host runs ahead as it would without the dispatcher's sync.
  LoweringOptions no_sync = plain;
  no_sync.software.moe_host_sync = false;
  const sim::Time act_launch_saved = find_op(forward(plain), "act").overhead;
  CHECK(host_wait(forward(fused), slow_host) < host_wait(forward(plain), slow_host));
  CHECK(host_wait(forward(fused), slow_host) <= host_wait(forward(no_sync), slow_host));
  CHECK(act_launch_saved > sim::Time::zero());
  // Full CUDA graphs capture the dropless block once it is sync-free.
  LoweringOptions graphs = fused;
  graphs.software.cuda_graphs = CudaGraphs::full;
  LoweringOptions plain_graphs = plain;
  plain_graphs.software.cuda_graphs = CudaGraphs::full;
  CHECK(find_op(forward(graphs), "expert_fc1").overhead == slow_host.kernel_gap);
  CHECK(find_op(forward(plain_graphs), "expert_fc1").overhead > slow_host.kernel_gap);
}

TEST_CASE("the fused MoE MLP's dgrad reduces FC1's bias gradient where experts have biases",
          "[workload][moe]") {
  // cuDNN's fused grouped MLP runs on Blackwell.
  const topologies::GpuSpec& b200 = *topologies::find_gpu("B200");
  const ComputeProfile profile = default_compute_profile(b200);
  // The work of FC2's dgrad, launch and gaps aside.
  auto dgrad = [&](bool bias, const SoftwareStack& stack, bool fused) {
    Case moe = dropless_ep8();
    moe.model.moe->expert_bias = bias;
    LoweringOptions o;
    o.software = stack;
    o.software.fused_moe_mlp = fused;
    const Workload w = build_workload(moe.model, moe.plan, moe.training, b200, profile, o);
    const WorkOp& op = find_op(w.stages[0].chunks[0].backward, "expert_fc2_dgrad");
    return (op.duration - op.overhead).s();
  };
  const SoftwareStack& fixed = *find_software("megatron-bridge-26.06");
  const SoftwareStack& regressed = *find_software("megatron-bridge-26.06.01");
  // cudnn-frontend#322's benchmark: 155.632 us with the bias gradient, 138.960 without; 1362.768
  // against 139.392 in the 1.24-1.25 kernel.
  CHECK(dgrad(true, fixed, true) / dgrad(false, fixed, true) == Approx(155.632 / 138.960));
  CHECK(dgrad(true, regressed, true) / dgrad(false, regressed, true) == Approx(1362.768 / 139.392));
  // The releases before and after 26.06.01 run the fixed kernel.
  CHECK(find_software("megatron-bridge-26.08")->dglu_dbias_factor == fixed.dglu_dbias_factor);
  // Without biases, or unfused (the bias is applied expert by expert outside the GEMM), the
  // GEMM is the same on every stack.
  CHECK(dgrad(false, regressed, true) == Approx(dgrad(false, fixed, true)));
  CHECK(dgrad(true, regressed, false) == Approx(dgrad(false, fixed, false)));
}

TEST_CASE("overlapped all-to-alls run beside the compute up to the next one, which they slow",
          "[workload][moe]") {
  Case moe = dropless_ep8();
  const ComputeProfile profile = default_compute_profile(h100());
  auto chunk = [&](bool overlap) {
    LoweringOptions o;
    o.software.moe_a2a_overlap = overlap;
    return build_workload(moe.model, moe.plan, moe.training, h100(), profile, o)
        .stages[0]
        .chunks[0];
  };
  const ChunkWork blocking = chunk(false), overlapped = chunk(true);
  // The SMs an NCCL collective's channels hold (the data-parallel ones' too).
  const double slowdown =
      build_workload(moe.model, moe.plan, moe.training, h100(), profile, {}).dp_contention;
  REQUIRE(slowdown > 0);
  for (const bool backward : {false, true}) {
    INFO((backward ? "backward" : "forward"));
    const PassProgram& b = backward ? blocking.backward : blocking.forward;
    const PassProgram& o = backward ? overlapped.backward : overlapped.forward;
    const auto ep_blocking = [](const WorkOp& op) {
      return op.kind == WorkOp::Kind::comm && op.group == GroupKind::ep;
    };
    const auto ep_started = [](const WorkOp& op) {
      return op.kind == WorkOp::Kind::comm_start && op.group == GroupKind::ep;
    };
    const int a2a = count_ops(b, ep_blocking);
    REQUIRE(a2a == 2 * moe.model.layers);  // dispatch and combine per layer
    CHECK(count_ops(o, ep_blocking) == 0);
    CHECK(count_ops(o, ep_started) == a2a);
    // Each all-to-all is joined before the next one starts and by the end of its block: none is
    // in flight beside the attention.
    int open = 0;
    const char* attention = backward ? "attn_bwd" : "attn";
    for (const WorkOp& op : o.ops) {
      if (ep_started(op)) {
        CHECK(open == 0);
        ++open;
      }
      if (op.kind == WorkOp::Kind::comm_wait) --open;
      if (std::string_view(op.name) == attention) CHECK(open == 0);
    }
    CHECK(open == 0);
    // The slowdown is the engine's to book, for as long as each is in flight: the compute ops
    // keep their own durations, the starts carry the SMs the channels hold.
    CHECK(o.compute == b.compute);
    for (const WorkOp& op : o.ops) {
      if (ep_started(op)) CHECK(o.contention_of(op.slot) == Approx(slowdown));
    }
  }
}

TEST_CASE("all-to-alls overlapped over the chunk run in order beside the whole pass",
          "[workload][moe]") {
  Case moe = dropless_ep8();
  const ComputeProfile profile = default_compute_profile(h100());
  auto chunk = [&](bool overlap, A2aOverlapScope scope) {
    LoweringOptions o;
    o.software.moe_a2a_overlap = overlap;
    o.software.moe_a2a_overlap_scope = scope;
    return build_workload(moe.model, moe.plan, moe.training, h100(), profile, o)
        .stages[0]
        .chunks[0];
  };
  const ChunkWork blocking = chunk(false, A2aOverlapScope::chunk);
  const ChunkWork chained = chunk(true, A2aOverlapScope::chunk);
  const ChunkWork modules = chunk(true, A2aOverlapScope::modules);
  // The scope means nothing without the overlap.
  CHECK(blocking.forward.compute == chunk(false, A2aOverlapScope::modules).forward.compute);
  for (const bool backward : {false, true}) {
    INFO((backward ? "backward" : "forward"));
    const PassProgram& b = backward ? blocking.backward : blocking.forward;
    const PassProgram& c = backward ? chained.backward : chained.forward;
    const PassProgram& m = backward ? modules.backward : modules.forward;
    const auto ep_started = [](const WorkOp& op) {
      return op.kind == WorkOp::Kind::comm_start && op.group == GroupKind::ep;
    };
    REQUIRE(count_ops(c, ep_started) == 2 * moe.model.layers);
    // Each starts after the one before it, and the compute waits for none of them until the
    // pass's end, where it waits for the last.
    int previous = -1;
    for (const WorkOp& op : c.ops) {
      if (!ep_started(op)) continue;
      CHECK(op.after == previous);
      previous = op.slot;
    }
    CHECK(count_ops(c, [](const WorkOp& op) { return op.kind == WorkOp::Kind::comm_wait; }) == 1);
    REQUIRE(c.ops.back().kind == WorkOp::Kind::comm_wait);
    CHECK(c.ops.back().slot == previous);
    // Modules pairing starts each all-to-all as soon as it is issued.
    for (const WorkOp& op : m.ops) {
      if (ep_started(op)) CHECK(op.after == -1);
    }
    // From the first all-to-all on, every kernel runs beside one: the first layer's attention
    // (before it) runs at full speed, the later layers' slower, where the modules pairing
    // leaves attention alone.
    const char* attention = backward ? "attn_bwd" : "attn";
    std::vector<sim::Time> chained_attention, blocking_attention, modules_attention;
    for (const WorkOp& op : c.ops)
      if (std::string_view(op.name) == attention) chained_attention.push_back(op.duration);
    for (const WorkOp& op : b.ops)
      if (std::string_view(op.name) == attention) blocking_attention.push_back(op.duration);
    for (const WorkOp& op : m.ops)
      if (std::string_view(op.name) == attention) modules_attention.push_back(op.duration);
    REQUIRE(chained_attention.size() == static_cast<size_t>(moe.model.layers));
    CHECK(modules_attention == blocking_attention);
    CHECK(chained_attention.back() > blocking_attention.back());
    if (!backward) CHECK(chained_attention.front() == blocking_attention.front());
    CHECK(c.compute > b.compute);
  }
}

TEST_CASE("Megatron-Core's gradient buckets grow with the data-parallel ranks, NeMo 2's stay fixed",
          "[workload][buckets]") {
  // Llama 3 8B on one stage, TP1: 32 layers of 218.1M parameters (h 4096, FFN 14336, 8 KV
  // heads), each layer's gradients in one bucket at most.
  const SoftwareStack& mcore = *find_software("megatron-core-r0.8.0");
  const SoftwareStack& bridge = *find_software("megatron-bridge-25.11");
  const auto buckets = [](Case c, const SoftwareStack& stack, int dp, int cp) {
    c.plan.dp = dp;
    c.plan.cp = cp;
    c.plan.bucket_bytes = stack.bucket_bytes;
    c.plan.bucket_bytes_per_dp_rank = stack.bucket_bytes_per_dp_rank;
    c.training.global_batch = dp;
    return std::pair{c.plan.gradient_bucket_bytes(),
                     build_with(c, stack, h100()).stages[0].chunks[0].buckets.size()};
  };
  const Case c = make_case("llama3-8b", 1, 1, 8, 8);
  // max(40M, 1M x DP) parameters of fp32 gradients: the floor up to 40 ranks, then 1M each
  // (data x context-parallel ranks, the group the gradients are reduced over).
  CHECK(buckets(c, mcore, 8, 1).first == 40e6 * 4);
  CHECK(buckets(c, mcore, 40, 1).first == 40e6 * 4);
  CHECK(buckets(c, mcore, 512, 1).first == 512e6 * 4);
  CHECK(buckets(c, mcore, 256, 2).first == 512e6 * 4);
  // 40M-parameter buckets hold one 218M-parameter layer each; 512M ones three layers.
  const size_t small = buckets(c, mcore, 8, 1).second;
  const size_t large = buckets(c, mcore, 512, 1).second;
  CHECK(small == 32);
  CHECK(large == 11);  // ceil(32 / 3)
  // Interleaved: the rank's later model chunks are one bucket each (disable_bucketing).
  Case vp = make_case("llama3-8b", 1, 2, 8, 16);
  vp.plan.vp = 2;
  vp.plan.bucket_bytes = mcore.bucket_bytes;
  const Workload w = build_with(vp, mcore, h100());
  CHECK(w.stages[0].chunks[0].buckets.size() == 8);  // 8 layers, one per bucket
  CHECK(w.stages[0].chunks[1].buckets.size() == 1);
  SoftwareStack every_chunk = mcore;
  every_chunk.bucket_first_chunk_only = false;
  CHECK(build_with(vp, every_chunk, h100()).stages[0].chunks[1].buckets.size() == 8);
  // 128 Mi parameters of bf16 gradients at any DP.
  CHECK(buckets(c, bridge, 8, 1).first == 128.0 * 1024 * 1024 * 2);
  CHECK(buckets(c, bridge, 1024, 1).first == 128.0 * 1024 * 1024 * 2);
  CHECK(buckets(c, bridge, 1024, 1).second == 32);
}

TEST_CASE("an MTP module runs on the loss's stage: its layer, eh_proj and a second head",
          "[workload][moe]") {
  Case c = make_case("mixtral-8x7b", 1, 2, 4, 8);
  c.plan.ep = 4;
  c.model.seq_len = 4096;
  const Workload without = build(c);
  c.model.mtp_layers = 1;
  const Workload with = build(c);
  // The first stage does not change.
  const ChunkWork& first0 = without.stages[0].chunks[0];
  const ChunkWork& first1 = with.stages[0].chunks[0];
  CHECK(first1.forward.ops.size() == first0.forward.ops.size());
  CHECK(first1.forward.compute == first0.forward.compute);
  CHECK(first1.dense_params == first0.dense_params);
  // The last runs the module and the head twice.
  const ChunkWork& last0 = without.stages[1].chunks[0];
  const ChunkWork& last1 = with.stages[1].chunks[0];
  CHECK(count_ops(last0.forward, named("mtp_eh_proj")) == 0);
  CHECK(count_ops(last1.forward, named("mtp_eh_proj")) == 1);
  CHECK(count_ops(last1.backward, named("mtp_eh_proj_wgrad")) == 1);
  CHECK(count_ops(last0.forward, named("lm_head")) == 1);
  CHECK(count_ops(last1.forward, named("lm_head")) == 2);
  CHECK(count_ops(last1.backward, named("lm_head_dgrad")) == 2);
  CHECK(last1.head_activation_bytes == 2 * last0.head_activation_bytes);
  CHECK(last1.layer_activations.size() == last0.layer_activations.size() + 1);
  CHECK(last1.forward.compute > last0.forward.compute);
  // Its parameters: one more MoE layer (a quarter of the 8 experts here, ep 4; attention, router
  // and norms), eh_proj 2h^2, three norms, and its own copy of the embedding (pp > 1).
  const double h = 4096, experts = 2 * 3 * h * 14336;
  const double attention = h * (32 + 2 * 8) * 128 + 32 * 128 * h;
  CHECK(last1.expert_params - last0.expert_params == Approx(experts));
  CHECK(last1.dense_params - last0.dense_params ==
        Approx(attention + 2 * h + h * 8 + 2 * h * h + 3 * h + 32000 * h));
  // Model FLOPs follow the model's count, the module included.
  TransformerConfig plain = c.model;
  plain.mtp_layers = 0;
  CHECK(with.model_flops / without.model_flops ==
        Approx(training_flops_per_token(c.model, false) / training_flops_per_token(plain, false)));
}

TEST_CASE("a layout that spells out the default split builds the same workload",
          "[workload][pipeline][equivalence]") {
  Case c = make_case("llama3-8b", 1, 4, 2, 16);
  c.plan.vp = 2;
  c.plan.balanced_pipeline = true;
  c.model.layers = 30;  // 8 virtual stages: the ends take the shortfall
  c.model.mtp_layers = 1;
  const Workload implicit = build(c);
  c.plan.pipeline_layout = pipeline_layout_text(stage_layout(c.plan, c.model));
  const Workload explicit_layout = build(c);
  for (int stage = 0; stage < 4; ++stage) {
    for (int chunk = 0; chunk < 2; ++chunk) {
      const ChunkWork& a = implicit.stages[stage].chunks[chunk];
      const ChunkWork& b = explicit_layout.stages[stage].chunks[chunk];
      CHECK(a.layers == b.layers);
      CHECK(a.forward.compute == b.forward.compute);
      CHECK(a.backward.compute == b.backward.compute);
      CHECK(a.dense_params == b.dense_params);
      CHECK(a.p2p_bytes == b.p2p_bytes);
    }
  }
  CHECK(implicit.model_flops == explicit_layout.model_flops);
}

TEST_CASE("an MTP module on a stage of its own sends its hidden state on to the loss",
          "[workload][pipeline]") {
  Case c = make_case("llama3-8b", 1, 4, 2, 16);
  c.model.mtp_layers = 1;
  c.plan.pipeline_layout = "Et*16|t*16|m|L";
  const Workload w = build(c);
  const ChunkWork& mtp = w.stages[2].chunks[0];
  const ChunkWork& loss = w.stages[3].chunks[0];
  CHECK(mtp.layers == 0);
  CHECK(count_ops(mtp.forward, named("mtp_eh_proj")) == 1);
  CHECK(count_ops(mtp.forward, named("embedding")) == 1);  // its own lookup of the next tokens
  CHECK(count_ops(mtp.forward, named("lm_head")) == 0);
  CHECK(count_ops(loss.forward, named("lm_head")) == 2);
  CHECK(count_ops(loss.forward, named("mtp_eh_proj")) == 0);
  // The main and the module's hidden states, concatenated, go from the module to the loss.
  CHECK(mtp.p2p_bytes == w.stages[1].chunks[0].p2p_bytes * 2.0);
  // A chunk of the head alone reduces its gradients once its backward is done.
  CHECK(count_ops(loss.backward,
                  [](const WorkOp& op) { return op.kind == WorkOp::Kind::bucket_ready; }) == 1);
}

TEST_CASE("QK-norm: an RMSNorm over every query and key head, forward and backward", "[workload]") {
  // Qwen3-30B-A3B at TP 2: 16 query and 2 key heads of width 128 per rank, 4096 tokens.
  Case c = make_case("qwen3-30b-a3b", 2, 1, 4, 8);
  c.plan.ep = 8;
  c.training.seq_len = 4096;
  REQUIRE(c.model.qk_norm);
  const Workload with = build(c);
  const ComputeProfile profile = default_compute_profile(h100());
  const ChunkWork& chunk = with.stages[0].chunks[0];
  CHECK(count_ops(chunk.forward, named("qk_norm")) == 48);
  CHECK(count_ops(chunk.backward, named("qk_norm_bwd")) == 48);
  // 4 bytes per element forward and 8 backward, at the norm kernels' shares.
  const double elements = 4096.0 * (16 + 2) * 128;
  CHECK(gpu_work(find_op(chunk.forward, "qk_norm"), profile) ==
        Approx(memory_seconds(h100(), profile, 4 * elements) / kNormForwardShare +
               profile.kernel_gap.s()));
  CHECK(gpu_work(find_op(chunk.backward, "qk_norm_bwd"), profile) ==
        Approx(memory_seconds(h100(), profile, 8 * elements) / kNormBackwardShare +
               profile.kernel_gap.s()));
  // The un-normed q and k stay for the backward.
  c.model.qk_norm = false;
  const Workload without = build(c);
  CHECK(count_ops(without.stages[0].chunks[0].forward, named("qk_norm")) == 0);
  CHECK(chunk.layer_activations[0].kept - without.stages[0].chunks[0].layer_activations[0].kept ==
        Approx(elements * 2));
}

TEST_CASE("FP8 attention: cuDNN's FP8 kernel in quantized layers, with its casts", "[workload]") {
  // Llama 3 8B in FP8 on one H100: T = 8192 tokens, 32 query and 8 KV heads of 128.
  Case c = make_case("llama3-8b", 1, 1, 8, 64);
  c.training.precision = Precision::fp8;
  const ComputeProfile p = default_compute_profile(h100());
  LoweringOptions bf16;
  LoweringOptions fp8 = bf16;
  fp8.software.fp8_attention = true;
  const auto chunk = [&](const LoweringOptions& o) {
    return build_workload(c.model, c.plan, c.training, h100(), p, o).stages[0].chunks[0];
  };
  const ChunkWork a = chunk(bf16), b = chunk(fp8);
  // Layer 15's kernels (the recipe may keep the first and last layers in BF16).
  for (const char* name : {"attn", "attn_bwd"}) {
    INFO(name);
    const bool fwd = std::string_view(name) == "attn";
    const WorkOp& x = *ops_named(fwd ? a.forward : a.backward, name)[15];
    const WorkOp& y = *ops_named(fwd ? b.forward : b.backward, name)[15];
    // (durations are whole picoseconds)
    CHECK((y.duration - y.overhead).s() ==
          Approx((x.duration - x.overhead).s() /
                 fp8_attention_speedup(h100(), fp8_kernel(!fwd, false)))
              .epsilon(1e-8));
    CHECK(y.flops == x.flops);
  }
  // q, k, v in and the output out, forward; the output gradient in and q, k, v's out, backward:
  // 3 bytes per value each.
  const double T = 8192, qkv = T * (32 + 2 * 8) * 128.0, out = T * 32 * 128.0;
  CHECK(gpu_work(find_op(b.forward, "attn_fp8_cast"), p) ==
        Approx(memory_seconds(h100(), p, 3 * qkv) + p.kernel_gap.s()));
  CHECK(gpu_work(find_op(b.forward, "attn_fp8_uncast"), p) ==
        Approx(memory_seconds(h100(), p, 3 * out) + p.kernel_gap.s()));
  CHECK(gpu_work(find_op(b.backward, "attn_fp8_cast_bwd"), p) ==
        Approx(memory_seconds(h100(), p, 3 * out) + p.kernel_gap.s()));
  CHECK(gpu_work(find_op(b.backward, "attn_fp8_uncast_bwd"), p) ==
        Approx(memory_seconds(h100(), p, 3 * qkv) + p.kernel_gap.s()));
  CHECK(count_ops(a.forward, named("attn_fp8_cast")) == 0);
  // BF16 layers (a BF16 run, or layers the recipe keeps in BF16) attend in BF16.
  c.training.precision = Precision::bf16;
  CHECK(chunk(fp8).forward.compute == chunk(bf16).forward.compute);
}

TEST_CASE("FP8 attention on Blackwell: a banded layer's backward computes the whole square",
          "[workload]") {
  // Llama 3 8B in MXFP8 on one GB200 with a 128-token window on every other layer (GPT-OSS's
  // pattern), FP8 attention on and off. Full layers run at the MXFP8 speed-ups; a banded
  // layer's forward gains nothing, and its backward in FP8 computes every key of the sequence
  // (S = 8192 over the band's w - w^2/2S) at the FP8 backward rate, cuDNN's benchmark's finding.
  Case c = make_case("llama3-8b", 1, 1, 8, 64);
  c.training.precision = Precision::mxfp8;
  c.model.sliding_window = 128;
  c.model.full_attention_every = 2;
  const topologies::GpuSpec& gpu = *topologies::find_gpu("GB200");
  const ComputeProfile p = default_compute_profile(gpu);
  LoweringOptions bf16;
  bf16.software.attention = AttentionKernel::cudnn;
  LoweringOptions fp8 = bf16;
  fp8.software.fp8_attention = true;
  const auto chunk = [&](const LoweringOptions& o) {
    return build_workload(c.model, c.plan, c.training, gpu, p, o).stages[0].chunks[0];
  };
  const ChunkWork a = chunk(bf16), b = chunk(fp8);
  const auto kernel = [](const WorkOp& x) { return (x.duration - x.overhead).s(); };
  const double S = 8192, w = 128, band = w - w * w / (2 * S);
  // Layers 14 (banded) and 15 (full), past the recipe's BF16 layers if any.
  REQUIRE(is_windowed_layer(c.model, 14));
  REQUIRE_FALSE(is_windowed_layer(c.model, 15));
  for (const bool fwd : {true, false}) {
    INFO((fwd ? "forward" : "backward"));
    const char* name = fwd ? "attn" : "attn_bwd";
    const auto& all_a = ops_named(fwd ? a.forward : a.backward, name);
    const auto& all_b = ops_named(fwd ? b.forward : b.backward, name);
    REQUIRE(all_a.size() == 32);
    // The backward pass runs the layers last to first.
    const auto at = [&](const std::vector<const WorkOp*>& ops, int layer) {
      return ops[fwd ? layer : 31 - layer];
    };
    const std::vector<const WorkOp*> xa = {at(all_a, 14), at(all_a, 15)};
    const std::vector<const WorkOp*> xb = {at(all_b, 14), at(all_b, 15)};
    // Full layer: the block-scaled speed-up.
    CHECK(
        kernel(*xb[1]) ==
        Approx(kernel(*xa[1]) / fp8_attention_speedup(gpu, fp8_kernel(!fwd, true))).epsilon(1e-8));
    CHECK(xb[0]->flops == xa[0]->flops);
    CHECK(xb[0]->flops < xa[1]->flops / 30);
    if (fwd) {
      CHECK(kernel(*xb[0]) == Approx(kernel(*xa[0])).epsilon(1e-8));
    } else {
      // BF16: the band plus a 256-key tile; FP8: the unmasked square, S keys.
      const double ramp_tile = (band + 256) / (band + 256 + p.attention_span_half);
      const double ramp_square = S / (S + p.attention_span_half);
      const double expected = kernel(*xa[0]) * (S / (band + 256)) * (ramp_tile / ramp_square) /
                              banded_fp8_backward_speedup(true);
      CHECK(kernel(*xb[0]) == Approx(expected).epsilon(1e-8));
      CHECK(kernel(*xb[0]) > 5 * kernel(*xa[0]));
    }
  }
}

TEST_CASE("Blackwell Ultra runs attention at its exponential units' rate", "[workload]") {
  // The same GB300 with Blackwell's exponential rate: only the attention kernels differ, by the
  // width law's factor (Llama 3 8B: heads of 128, cuDNN).
  Case c = make_case("llama3-8b", 1, 1, 8, 64);
  const topologies::GpuSpec ultra = *topologies::find_gpu("GB300");
  topologies::GpuSpec plain = ultra;
  plain.exp_rate = 1;
  const ComputeProfile p = default_compute_profile(ultra);
  LoweringOptions o;
  o.software.attention = AttentionKernel::cudnn;
  const ChunkWork a = build_workload(c.model, c.plan, c.training, ultra, p, o).stages[0].chunks[0];
  const ChunkWork b = build_workload(c.model, c.plan, c.training, plain, p, o).stages[0].chunks[0];
  for (const char* name : {"attn", "attn_bwd"}) {
    INFO(name);
    const bool fwd = std::string_view(name) == "attn";
    const WorkOp& x = find_op(fwd ? a.forward : a.backward, name);
    const WorkOp& y = find_op(fwd ? b.forward : b.backward, name);
    CHECK((y.duration - y.overhead).s() ==
          Approx((x.duration - x.overhead).s() *
                 attention_exp_rate_factor(AttentionKernel::cudnn, 128, !fwd, 2,
                                           topologies::GpuGeneration::blackwell))
              .epsilon(1e-8));
  }
  CHECK(find_op(a.forward, "qkv").duration == find_op(b.forward, "qkv").duration);
}
