#pragma once
// MLPerf Training's LLM benchmarks as data: what a submission must train to (the reference
// convergence points), how often and on how much it evaluates, so that a time to train follows
// from a simulated step. Facts of MLCommons' rules and RCP library, never fitted to results.

#include <optional>
#include <span>
#include <string_view>

#include "models/parallel_plan.hpp"
#include "models/transformer.hpp"

namespace fabricsim::models {

/// One reference convergence point: the olympic mean (fastest and slowest run dropped) of the
/// samples the reference needed to reach the target at a global batch size.
struct ConvergencePoint {
  int global_batch = 0;
  double samples = 0;
};

struct MlperfBenchmark {
  std::string_view name;  ///< MLPerf's benchmark name ("llama2_70b_lora")
  TrainingTask task = TrainingTask::pretrain;
  int layers = 0;  ///< the model the benchmark trains, as the case's record gives it
  int hidden = 0;
  int seq_len = 0;
  /// Evaluation every this many sequences, rounded up to a whole number of steps.
  int eval_interval = 0;
  int eval_samples = 0;  ///< sequences per evaluation
  /// The first FLOOR(skip_per_batch x global_batch + skip_base) evaluations are not run.
  double skip_per_batch = 0;
  double skip_base = 0;
  std::span<const ConvergencePoint> convergence;  ///< ascending global batch
  std::string_view source;
};

/// The benchmark a training case of `task` on `model` at `seq_len` tokens runs, if any.
const MlperfBenchmark* mlperf_benchmark_for(TrainingTask task, const TransformerConfig& model,
                                            int seq_len);

/// Samples the reference needs at `global_batch`: linear in the batch between the two nearest
/// convergence points, as MLCommons' rcp_checker interpolates them, and the smallest point's
/// below it. Above the largest, where the rules would have the submitter run new reference
/// points, the last two points' line goes on (convergence slows with the batch; never below the
/// largest point's samples): `extrapolated` says so.
struct Convergence {
  double samples = 0;
  bool extrapolated = false;
};
std::optional<Convergence> samples_to_converge(const MlperfBenchmark& benchmark, int global_batch);

/// A run's timed region as MLPerf clocks it, in units of one training step: the steps to the
/// converged evaluation plus the evaluations run on the way (the converging one included). An
/// evaluation runs validation steps of one global batch each until it has covered
/// `eval_samples` (the training loop's validation draws whole global batches: NVIDIA's GPT-3 logs
/// time three validation steps per evaluation of 5,659 sequences at batches 2,048 and 2,688),
/// each sequence's forward pass costing `forward_step_fraction` of a training step.
struct MlperfRun {
  double samples = 0;         ///< samples trained (the convergence point)
  bool extrapolated = false;  ///< the batch lies above the largest reference point
  double train_steps = 0;     ///< samples / global batch
  int evaluations = 0;        ///< evaluations run, the converging one included
  int validation_steps = 0;   ///< per evaluation: CEIL(eval_samples / global batch)
  double eval_steps = 0;      ///< the evaluations' cost in training steps
  double steps() const { return train_steps + eval_steps; }
};
std::optional<MlperfRun> mlperf_run(const MlperfBenchmark& benchmark, int global_batch,
                                    double forward_step_fraction);

}  // namespace fabricsim::models
