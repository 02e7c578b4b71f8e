#include "calibration/kineto_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "sim/input_error.hpp"

namespace fabricsim::calibration {

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::gemm:
      return "gemm";
    case KernelClass::attention:
      return "attention";
    case KernelClass::communication:
      return "communication";
    case KernelClass::memory:
      return "memory";
  }
  return "?";
}

namespace {

bool contains(const std::string& lower, std::initializer_list<std::string_view> words) {
  for (std::string_view w : words) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

KernelClass classify_kernel(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // NCCL's kernels, and DeepEP's expert-parallel dispatch and combine (deep_ep::intranode,
  // ::internode, ::internode_ll; dpsk::ep:: in DeepSeek's own profiles), which move tokens
  // over NVLink and RDMA from their own SMs.
  if (contains(lower, {"nccl", "deep_ep::", "dpsk::ep::"})) return KernelClass::communication;
  if (contains(lower, {"flash", "fmha", "sdpa", "attention", "attn"}))
    return KernelClass::attention;
  if (contains(lower, {"gemm", "nvjet", "xmma", "conv", "winograd", "cutlass", "cublas", "wgrad",
                       "dgrad", "tensorop"})) {
    return KernelClass::gemm;
  }
  return KernelClass::memory;
}

KinetoTrace read_kineto_trace(const sim::JsonValue& root) {
  KinetoTrace t;
  t.file = root.file();
  if (!root.raw().is_object() || !root.raw().contains("traceEvents")) {
    root.fail("a PyTorch profiler trace: an object with traceEvents");
  }
  sim::ObjectReader top = root.as_object();
  const sim::JsonValue events = top.required("traceEvents");
  if (!events.raw().is_array()) events.fail("an array of trace events");
  if (auto props = top.optional("deviceProperties")) {
    const nlohmann::json& p = props->raw();
    if (p.is_array() && !p.empty() && p[0].is_object() && p[0].contains("name") &&
        p[0]["name"].is_string()) {
      t.gpu_name = p[0]["name"].get<std::string>();
    }
  }
  std::vector<std::pair<double, double>> intervals;  // GPU activity, us
  std::set<std::string> steps;
  const nlohmann::json& list = events.raw();
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    if (!e.is_object()) continue;
    const auto cat = e.find("cat");
    const auto name = e.find("name");
    if (cat == e.end() || !cat->is_string()) continue;
    const std::string& c = cat->get_ref<const std::string&>();
    const bool named = name != e.end() && name->is_string();
    if (named && (c == "user_annotation" || c == "cpu_op") &&
        name->get_ref<const std::string&>().starts_with("ProfilerStep#")) {
      steps.insert(name->get<std::string>());
      continue;
    }
    const bool kernel = c == "kernel";
    if (!kernel && c != "gpu_memcpy" && c != "gpu_memset") continue;
    const auto ts = e.find("ts");
    const auto dur = e.find("dur");
    const sim::JsonValue at = events.at(i);
    if (ts == e.end() || !ts->is_number() || dur == e.end() || !dur->is_number() ||
        !std::isfinite(ts->get<double>()) || !(dur->get<double>() >= 0) ||
        !std::isfinite(dur->get<double>())) {
      at.fail("a GPU activity with numeric ts and non-negative dur (microseconds)");
    }
    const KernelClass k = kernel && named ? classify_kernel(name->get_ref<const std::string&>())
                                          : KernelClass::memory;
    const double us = dur->get<double>();
    t.total.seconds[static_cast<size_t>(k)] += us * 1e-6;
    ++t.total.kernels[static_cast<size_t>(k)];
    intervals.emplace_back(ts->get<double>(), ts->get<double>() + us);
  }
  if (intervals.empty())
    events.fail("a trace with GPU activity (cat kernel, gpu_memcpy, gpu_memset)");
  std::sort(intervals.begin(), intervals.end());
  double busy = 0, start = intervals.front().first, end = intervals.front().first;
  double cur_start = start, cur_end = start;
  for (const auto& [a, b] : intervals) {
    if (a > cur_end) {
      busy += cur_end - cur_start;
      cur_start = a;
      cur_end = b;
    } else {
      cur_end = std::max(cur_end, b);
    }
    end = std::max(end, b);
  }
  busy += cur_end - cur_start;
  t.window_s = (end - start) * 1e-6;
  t.gpu_busy = t.window_s > 0 ? busy * 1e-6 / t.window_s : 1.0;
  t.steps = static_cast<int>(steps.size());
  t.per_step = t.total;
  if (t.steps > 0) {
    for (double& s : t.per_step.seconds)
      s /= t.steps;
  }
  return t;
}

KinetoTrace load_kineto_trace(const std::string& path) {
  const sim::JsonDocument doc = sim::load_json_file(path);
  return read_kineto_trace(doc.root());
}

}  // namespace fabricsim::calibration
