#include "tools/cuda/nccl_options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "tools/cuda/cli11_parse.hpp"
#include "tools/cuda/size_sweep.hpp"

namespace fabricsim::tools::cuda {

std::string_view nccl_dtype_name(NcclDtype dtype) {
  switch (dtype) {
    case NcclDtype::kFloat:
      return "float";
    case NcclDtype::kHalf:
      return "half";
    case NcclDtype::kBfloat16:
      return "bfloat16";
  }
  throw std::invalid_argument("unknown NCCL dtype");
}

uint64_t nccl_dtype_bytes(NcclDtype dtype) {
  return dtype == NcclDtype::kFloat ? 4 : 2;
}

CommandLine<NcclOptions> parse_nccl_args(int argc, const char* const* argv) {
  CLI::App app(
      "fabricsim-nccl-bench: times NCCL collectives over a size sweep the way nccl-tests does and "
      "writes fabricsim-nccl-bench JSON for calibration. One process drives -g GPUs, or run one "
      "process per GPU with mpirun (MPI builds).",
      "fabricsim-nccl-bench");
  NcclOptions o;
  std::vector<std::string> op_names;
  std::string min_text = "8";
  std::string max_text = "8G";
  int64_t factor = 2;
  std::string dtype_text = "float";
  app.add_option("--ops", op_names,
                 "comma-separated ops: all_reduce,all_gather,reduce_scatter,alltoall,broadcast,"
                 "sendrecv (default: all)")
      ->delimiter(',')
      ->type_name("OP[,OP...]");
  app.add_option("-b,--minbytes", min_text, "smallest size (bytes, or K/M/G binary)")
      ->type_name("SIZE")
      ->capture_default_str();
  app.add_option("-e,--maxbytes", max_text, "largest size")
      ->type_name("SIZE")
      ->capture_default_str();
  app.add_option("-f,--stepfactor", factor, "size multiplier between steps")->capture_default_str();
  app.add_option("-w,--warmup", o.warmup, "untimed ops per size")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed back-to-back ops per size")->capture_default_str();
  app.add_option("-d,--dtype", dtype_text, "float | half | bfloat16")->capture_default_str();
  app.add_flag("--check", o.check, "verify the result of each op and size once before timing");
  app.add_flag("--inplace", o.in_place, "also time the in-place form (not alltoall, sendrecv)");
  app.add_option("-g,--ngpus", o.gpus_per_process, "GPUs driven by this process")
      ->capture_default_str();
  app.add_option("-o,--output", o.output, "output JSON file (default: stdout; MPI: rank 0 writes)")
      ->type_name("FILE");
  if (auto help = parse_or_help(app, argc, argv)) return {std::move(help), {}};

  if (!op_names.empty()) {
    o.ops.clear();
    for (const std::string& name : op_names) {
      try {
        const CollectiveOp op = parse_collective_op(name);
        if (std::find(o.ops.begin(), o.ops.end(), op) == o.ops.end()) o.ops.push_back(op);
      } catch (const std::invalid_argument& e) {
        flag_error("--ops", e.what());
      }
    }
  }
  o.min_bytes = parse_message_size(min_text, "-b");
  o.max_bytes = parse_message_size(max_text, "-e");
  if (o.min_bytes > o.max_bytes) {
    flag_error("-b", fmt::format("the smallest size (-b {}) is larger than the largest (-e {})",
                                 min_text, max_text));
  }
  if (factor < 2) flag_error("-f", "expected a step factor of at least 2");
  o.step_factor = static_cast<uint64_t>(factor);
  if (o.warmup < 0) flag_error("-w", "expected a non-negative integer");
  if (o.iters < 1) flag_error("-n", "expected a positive integer");
  if (o.gpus_per_process < 1) flag_error("-g", "expected a positive number of GPUs");
  if (dtype_text == "float") {
    o.dtype = NcclDtype::kFloat;
  } else if (dtype_text == "half") {
    o.dtype = NcclDtype::kHalf;
  } else if (dtype_text == "bfloat16") {
    o.dtype = NcclDtype::kBfloat16;
  } else {
    flag_error("-d", fmt::format("unknown dtype '{}' (expected one of: float, half, bfloat16)",
                                 dtype_text));
  }
  return {std::nullopt, std::move(o)};
}

}  // namespace fabricsim::tools::cuda
