#include "models/memory_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "models/pipeline_schedule.hpp"

namespace fabricsim::models {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

}  // namespace

MemoryReport memory_report(const Workload& w, const ParallelPlan& plan,
                           const TrainingConfig& training, const topologies::GpuSpec& gpu) {
  MemoryReport report;
  // Marketed "80 GB" of HBM are GiB (an H100 reports 81,559 MiB); about 1% is not allocatable.
  report.capacity = gpu.hbm_gb * kGiB * 0.99;
  const auto schedule = pipeline_schedule(plan.pp, plan.vp, w.microbatches);
  const bool lora = training.task == TrainingTask::lora;
  const double dense_dp = plan.dense_dp();
  const double edp = plan.expert_dp();
  for (int s = 0; s < plan.pp; ++s) {
    const StageWork& sw = w.stages[static_cast<size_t>(s)];
    StageMemory m;
    m.stage = s;
    const double params = sw.dense_params + sw.expert_params;
    double weight_bytes = params * w.weight_bytes;
    double unsharded_bucket = 0;  // ZeRO-3: the largest bucket, gathered in full
    if (plan.zero >= 3) {
      for (const ChunkWork& c : sw.chunks) {
        for (const ChunkWork::Bucket& bucket : c.buckets) {
          unsharded_bucket = std::max(unsharded_bucket, bucket.dense + bucket.expert);
        }
      }
      // The shard, plus the bucket in use and the one being prefetched.
      weight_bytes = sw.dense_params * w.param_bytes / dense_dp +
                     sw.expert_params * w.param_bytes / edp +
                     2.0 * w.param_bytes * unsharded_bucket;
    }
    m.weights = weight_bytes;
    const double trainable_dense = lora ? sw.trainable_params : sw.dense_params;
    const double trainable_expert = lora ? 0.0 : sw.expert_params;
    // Main gradients (bf16, or fp32 for fp16 training); sharded from ZeRO-2 on.
    const double grad_share = plan.zero >= 2;
    m.gradients = w.grad_bytes * (trainable_dense / (grad_share ? dense_dp : 1.0) +
                                  trainable_expert / (grad_share ? edp : 1.0) + unsharded_bucket);
    // Adam: master weights and two moments (12 bytes in fp32, 6 in bf16); sharded from ZeRO-1 on.
    const bool opt_share = plan.zero >= 1;
    m.optimizer = 3.0 * w.optimizer_state_bytes *
                  (trainable_dense / (opt_share ? dense_dp : 1.0) +
                   trainable_expert / (opt_share ? edp : 1.0));
    // Peak activations over the schedule: chunks forwarded but not yet backwarded (under this
    // plan's recomputed and offloaded layers, which need not be those the chunks were built for).
    std::vector<double> chunk_bytes;
    for (const ChunkWork& c : sw.chunks)
      chunk_bytes.push_back(chunk_activation_bytes(c, plan));
    double live = 0, peak = 0;
    int count = 0, peak_count = 0;
    for (const PipelineTask& t : schedule[static_cast<size_t>(s)]) {
      const double a = chunk_bytes[static_cast<size_t>(t.chunk)];
      live += t.forward ? a : -a;
      count += t.forward ? 1 : -1;
      if (live > peak) {
        peak = live;
        peak_count = count;
      }
    }
    m.activations = peak;
    m.in_flight = peak_count;
    m.framework = kFrameworkReserveBytes;
    report.stages.push_back(m);
  }
  for (const StageMemory& m : report.stages) {
    if (m.total() > report.stages[static_cast<size_t>(report.worst_stage)].total()) {
      report.worst_stage = m.stage;
    }
  }
  const StageMemory& worst = report.stages[static_cast<size_t>(report.worst_stage)];
  report.fits = worst.total() <= report.capacity;
  if (!report.fits) {
    report.reason =
        fmt::format("stage {} needs {:.1f} GiB of {:.1f} GiB HBM: {}", worst.stage,
                    worst.total() / kGiB, report.capacity / kGiB, memory_breakdown_text(worst));
  }
  return report;
}

std::string memory_breakdown_text(const StageMemory& m) {
  return fmt::format(
      "weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f} ({} micro-batch "
      "chunks in flight), framework {:.1f}",
      m.weights / kGiB, m.gradients / kGiB, m.optimizer / kGiB, m.activations / kGiB, m.in_flight,
      m.framework / kGiB);
}

nlohmann::json memory_to_json(const MemoryReport& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageMemory& m : r.stages) {
    stages.push_back({{"stage", m.stage},
                      {"weights_GiB", m.weights / kGiB},
                      {"gradients_GiB", m.gradients / kGiB},
                      {"optimizer_GiB", m.optimizer / kGiB},
                      {"activations_GiB", m.activations / kGiB},
                      {"framework_GiB", m.framework / kGiB},
                      {"total_GiB", m.total() / kGiB},
                      {"in_flight_chunks", m.in_flight}});
  }
  return {{"capacity_GiB", r.capacity / kGiB},
          {"fits", r.fits},
          {"worst_stage", r.worst_stage},
          {"reason", r.reason},
          {"stages", stages}};
}

}  // namespace fabricsim::models
