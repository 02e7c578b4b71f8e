#include "models/mlperf_benchmark.hpp"

#include <catch2/catch.hpp>

#include "models/model_presets.hpp"

using namespace fabricsim::models;

namespace {

const MlperfBenchmark& lora() {
  TransformerConfig llama2_70b = *find_model("llama2-70b");
  const MlperfBenchmark* b = mlperf_benchmark_for(TrainingTask::lora, llama2_70b, 8192);
  REQUIRE(b != nullptr);
  return *b;
}

}  // namespace

TEST_CASE("mlperf: a case's model, task and sequence pick the benchmark", "[mlperf]") {
  const TransformerConfig llama2_70b = *find_model("llama2-70b");
  CHECK(lora().name == "llama2_70b_lora");
  CHECK(mlperf_benchmark_for(TrainingTask::lora, llama2_70b, 4096) == nullptr);
  CHECK(mlperf_benchmark_for(TrainingTask::pretrain, llama2_70b, 8192) == nullptr);
  const MlperfBenchmark* b8 =
      mlperf_benchmark_for(TrainingTask::pretrain, *find_model("llama3-8b"), 8192);
  REQUIRE(b8 != nullptr);
  CHECK(b8->name == "llama31_8b");
  const MlperfBenchmark* b405 =
      mlperf_benchmark_for(TrainingTask::pretrain, *find_model("llama3-405b"), 8192);
  REQUIRE(b405 != nullptr);
  CHECK(b405->name == "llama31_405b");
  // GPT-3 175B at its 2,048 tokens (rounds 3.0-4.1), RCPs in sequences: 1,179,198,610 tokens
  // at batch 2,048 (olympic) over 2,048.
  const MlperfBenchmark* gpt3 =
      mlperf_benchmark_for(TrainingTask::pretrain, *find_model("gpt3-175b"), 2048);
  REQUIRE(gpt3 != nullptr);
  CHECK(gpt3->name == "gpt3");
  CHECK(samples_to_converge(*gpt3, 2048)->samples == Approx(575078.4));
  // An MoE model of the same width is another benchmark (none is modelled).
  TransformerConfig moe = *find_model("llama3-8b");
  moe.moe = MoeConfig{};
  CHECK(mlperf_benchmark_for(TrainingTask::pretrain, moe, 8192) == nullptr);
}

TEST_CASE("mlperf: samples to converge interpolate the reference points linearly", "[mlperf]") {
  const MlperfBenchmark& b = lora();
  CHECK(samples_to_converge(b, 8)->samples == Approx(3178.7));
  CHECK(samples_to_converge(b, 128)->samples == Approx(11264.0));
  CHECK_FALSE(samples_to_converge(b, 128)->extrapolated);
  // Between 32 (6,037.3) and 128 (11,264): a third of the way at 64.
  CHECK(samples_to_converge(b, 64)->samples == Approx(6037.3 + (11264.0 - 6037.3) / 3));
  // Below the smallest batch the smallest point holds; above the largest the last line goes on.
  CHECK(samples_to_converge(b, 2)->samples == Approx(3178.7));
  const Convergence above = *samples_to_converge(b, 224);
  CHECK(above.extrapolated);
  CHECK(above.samples == Approx(11264.0 + (11264.0 - 6037.3)));
  CHECK_FALSE(samples_to_converge(b, 0));
}

TEST_CASE("mlperf: a run's steps count the evaluations the rules run", "[mlperf]") {
  const MlperfBenchmark& b = lora();
  // Batch 8: 3,178.7 samples = 397.3 steps; evaluations every 384 sequences reach 8 by then
  // (3,178.7 / 384 = 8.28), the first FLOOR(0.125 x 8 + 2) = 3 skipped: 5 run, each of
  // CEIL(173 / 8) = 22 validation steps.
  const MlperfRun r8 = *mlperf_run(b, 8, 0.01);
  CHECK(r8.train_steps == Approx(3178.7 / 8));
  CHECK(r8.evaluations == 5);
  CHECK(r8.validation_steps == 22);
  // Each sequence's forward costs 1% of a step: 176 sequences, the last step's 3 beyond the set
  // included.
  CHECK(r8.eval_steps == Approx(5 * 22 * 8 * 0.01));
  CHECK(r8.steps() == Approx(r8.train_steps + r8.eval_steps));
  // Batch 9 does not divide 384: every CEIL(384 / 9) = 43 steps, 387 sequences; 3,285.4 samples
  // reach 8 evaluations, FLOOR(1.125 + 2) = 3 skipped.
  const MlperfRun r9 = *mlperf_run(b, 9, 0.0);
  CHECK(r9.samples == Approx(3178.7 + (4032.0 - 3178.7) / 8));
  CHECK(r9.evaluations == 5);
  CHECK(r9.eval_steps == 0);
  // Batch 64: 7,779.5 samples reach 20 evaluations, 10 skipped; three validation steps cover the
  // 173 sequences (192 forwards), one step at batch 173.
  CHECK(mlperf_run(b, 64, 0.0)->evaluations == 10);
  CHECK(mlperf_run(b, 64, 0.0)->validation_steps == 3);
  CHECK(mlperf_run(b, 173, 0.0)->validation_steps == 1);
  // Llama 3.1 405B at 1,152: 313,344 samples = 17 evaluations of 18,432, the first
  // FLOOR(0.0026 x 1152 + 12) = 14 skipped; 5,760 sequences are 5 validation steps.
  const MlperfBenchmark* b405 =
      mlperf_benchmark_for(TrainingTask::pretrain, *find_model("llama3-405b"), 8192);
  REQUIRE(b405 != nullptr);
  const MlperfRun r405 = *mlperf_run(*b405, 1152, 1e-3);
  CHECK(r405.evaluations == 3);
  CHECK(r405.validation_steps == 5);
  CHECK(r405.eval_steps == Approx(3 * 5 * 1152 * 1e-3));
  // At least the converging evaluation runs.
  CHECK(mlperf_run(b, 128, 0.0)->evaluations >= 1);
  CHECK(mlperf_run(b, 256, 0.0)->extrapolated);
  CHECK_FALSE(mlperf_run(b, 0, 0.0));
}
