#include "tools/cuda/gemm_options.hpp"

#include "tools/cuda/cli11_parse.hpp"
#include "tools/cuda/size_sweep.hpp"

namespace fabricsim::tools::cuda {

CommandLine<GemmOptions> parse_gemm_args(int argc, const char* const* argv) {
  CLI::App app(
      "fabricsim-gemm-bench: times cuBLASLt GEMMs (heuristic algorithm, cold rotating buffers, "
      "CUDA events) and writes fabricsim-gemm-bench JSON for calibration.",
      "fabricsim-gemm-bench");
  GemmOptions o;
  std::string shapes_file;
  std::vector<std::string> shape_texts;
  std::string rotate_text;
  int64_t seed = static_cast<int64_t>(o.seed);
  app.add_option("--shapes", shapes_file,
                 "JSON shape list {\"shapes\": [{\"m\":..,\"n\":..,\"k\":..,\"batch\":1,"
                 "\"dtype\":\"bf16\"}]}")
      ->type_name("FILE");
  app.add_option("--shape", shape_texts,
                 "MxNxK[:dtype[:batch]], dtype bf16|fp16|fp8|tf32; repeatable")
      ->type_name("MxNxK[:dtype[:batch]]")
      ->allow_extra_args(false);
  app.add_option("--warmup", o.warmup, "untimed runs per shape")->capture_default_str();
  app.add_option("--iters", o.iters, "timed runs per shape")->capture_default_str();
  app.add_option("--rotate-bytes", rotate_text,
                 "minimum bytes of the rotating A/B/D buffer set, e.g. 512M (default: 2x L2)")
      ->type_name("SIZE");
  app.add_option("--device", o.device, "CUDA device index")->capture_default_str();
  app.add_option("-o,--output", o.output, "output JSON file (default: stdout)")->type_name("FILE");
  app.add_option("--seed", seed, "seed of the random input data")->capture_default_str();
  if (auto help = parse_or_help(app, argc, argv)) return {std::move(help), {}};

  if (!shapes_file.empty()) o.shapes_file = shapes_file;
  for (const std::string& text : shape_texts)
    o.shape_args.push_back(parse_shape_arg(text));
  if (o.warmup < 0) flag_error("--warmup", "expected a non-negative integer");
  if (o.iters < 1) flag_error("--iters", "expected a positive integer");
  if (o.device < 0) flag_error("--device", "expected a non-negative device index");
  if (seed < 0) flag_error("--seed", "expected a non-negative integer");
  o.seed = static_cast<uint64_t>(seed);
  if (!rotate_text.empty()) o.rotate_bytes = parse_message_size(rotate_text, "--rotate-bytes");
  return {std::nullopt, std::move(o)};
}

std::vector<GemmShape> collect_gemm_shapes(const GemmOptions& options) {
  std::vector<GemmShape> shapes;
  if (options.shapes_file) shapes = load_shapes_file(*options.shapes_file);
  shapes.insert(shapes.end(), options.shape_args.begin(), options.shape_args.end());
  if (shapes.empty()) {
    throw sim::InputError("<command line>", "",
                          "no shapes to measure (give --shapes FILE or --shape MxNxK)");
  }
  return shapes;
}

}  // namespace fabricsim::tools::cuda
