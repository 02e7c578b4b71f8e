#include "models/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace fabricsim::models {

std::vector<std::vector<PipelineTask>> pipeline_schedule(int pp, int vp, int m) {
  if (pp < 1 || vp < 1 || m < 1)
    throw std::invalid_argument("pipeline_schedule: sizes must be >= 1");
  if (vp > 1 && m % pp != 0) {
    throw std::invalid_argument("the interleaved schedule needs micro-batches divisible by pp");
  }
  std::vector<std::vector<PipelineTask>> out(static_cast<size_t>(pp));
  const int total = m * vp;  // (microbatch, chunk) pairs per stage
  // Megatron's mapping of the k-th forward (backward) of a stage to its micro-batch and chunk:
  // groups of pp micro-batches cycle through the chunks.
  auto forward_of = [&](int k) {
    const int group = k / (pp * vp);
    return PipelineTask{true, group * pp + k % pp, (k / pp) % vp};
  };
  auto backward_of = [&](int k) {
    const int group = k / (pp * vp);
    return PipelineTask{false, group * pp + k % pp, vp - 1 - (k / pp) % vp};
  };
  for (int s = 0; s < pp; ++s) {
    int warmup;
    if (vp == 1) {
      warmup = std::min(pp - s - 1, m);
    } else {
      warmup = std::min((pp - s - 1) * 2 + (vp - 1) * pp, total);
    }
    auto& tasks = out[s];
    int f = 0;
    int b = 0;
    for (; f < warmup; ++f)
      tasks.push_back(forward_of(f));
    while (f < total) {
      tasks.push_back(forward_of(f++));
      tasks.push_back(backward_of(b++));
    }
    while (b < total)
      tasks.push_back(backward_of(b++));
  }
  return out;
}

int max_in_flight(const std::vector<PipelineTask>& tasks) {
  int live = 0;
  int peak = 0;
  for (const PipelineTask& t : tasks) {
    live += t.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace fabricsim::models
