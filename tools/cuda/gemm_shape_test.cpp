#include "tools/cuda/gemm_shape.hpp"

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sim/input_error.hpp"

using namespace fabricsim::tools::cuda;
using fabricsim::sim::InputError;

TEST_CASE("shape arguments accept MxNxK with optional dtype and batch", "[cuda-tools]") {
  CHECK(parse_shape_arg("8192x8192x8192") == GemmShape{8192, 8192, 8192, 1, GemmDtype::kBf16});
  CHECK(parse_shape_arg("4096x1024x512:fp8") == GemmShape{4096, 1024, 512, 1, GemmDtype::kFp8});
  CHECK(parse_shape_arg("128x256x64:tf32:32") == GemmShape{128, 256, 64, 32, GemmDtype::kTf32});
  CHECK(parse_shape_arg("1x1x1:fp16") == GemmShape{1, 1, 1, 1, GemmDtype::kFp16});
}

TEST_CASE("bad shape arguments say what is wrong", "[cuda-tools][bad-input]") {
  CHECK_THROWS_AS(parse_shape_arg("8192x8192"), InputError);
  CHECK_THROWS_WITH(parse_shape_arg("8192x8192"),
                    Catch::StartsWith("<command line>: --shape: expected MxNxK") &&
                        Catch::Contains("need three sizes"));
  CHECK_THROWS_WITH(parse_shape_arg("0x8x8"), Catch::Contains("M must be a positive integer"));
  CHECK_THROWS_WITH(parse_shape_arg("8x-8x8"), Catch::Contains("N must be a positive integer"));
  CHECK_THROWS_WITH(parse_shape_arg("8x8x8.5"), Catch::Contains("K must be a positive integer"));
  CHECK_THROWS_WITH(parse_shape_arg("8x8x8:int8"), Catch::Contains("unknown dtype 'int8'"));
  CHECK_THROWS_WITH(parse_shape_arg("8x8x8:bf16:0"), Catch::Contains("batch must be"));
  CHECK_THROWS_WITH(parse_shape_arg("8x8x8:bf16:1:2"), Catch::Contains("too many"));
  CHECK_THROWS_WITH(parse_shape_arg("99999999999x8x8"), Catch::Contains("M must be"));
}

TEST_CASE("shape lists are read strictly", "[cuda-tools]") {
  const auto shapes = parse_shapes_json(
      R"({"shapes": [{"m": 8192, "n": 8192, "k": 8192, "batch": 1, "dtype": "bf16"},
                     {"m": 16, "n": 32, "k": 64, "dtype": "fp8"},
                     {"m": 1, "n": 2, "k": 3, "batch": 4}]})",
      "shapes.json");
  REQUIRE(shapes.size() == 3);
  CHECK(shapes[0] == GemmShape{8192, 8192, 8192, 1, GemmDtype::kBf16});
  CHECK(shapes[1] == GemmShape{16, 32, 64, 1, GemmDtype::kFp8});
  CHECK(shapes[2] == GemmShape{1, 2, 3, 4, GemmDtype::kBf16});
}

TEST_CASE("shape list errors name the file and JSON pointer", "[cuda-tools][bad-input]") {
  CHECK_THROWS_WITH(
      parse_shapes_json(R"({"shapes": [{"m": 1, "n": 2, "k": 3, "bach": 4}]})", "s.json"),
      Catch::StartsWith("s.json: /shapes/0/bach: unknown key 'bach'"));
  CHECK_THROWS_WITH(parse_shapes_json(R"({"shapes": [{"m": 1, "n": 0, "k": 3}]})", "s.json"),
                    "s.json: /shapes/0/n: expected a positive integer, got 0");
  CHECK_THROWS_WITH(parse_shapes_json(R"({"shapes": [{"m": 1, "n": 2, "k": 3.5}]})", "s.json"),
                    Catch::StartsWith("s.json: /shapes/0/k: expected an integer, got 3.5"));
  CHECK_THROWS_WITH(
      parse_shapes_json(
          R"({"shapes": [{"m": 1, "n": 2, "k": 3}, {"m": 1, "n": 2, "k": 3, "dtype": "int4"}]})",
          "s.json"),
      Catch::StartsWith("s.json: /shapes/1/dtype: expected one of bf16, fp16, fp8, tf32"));
  CHECK_THROWS_WITH(parse_shapes_json(R"({"shapes": [{"m": 1, "k": 3}]})", "s.json"),
                    "s.json: /shapes/0/n: missing required field");
  CHECK_THROWS_WITH(parse_shapes_json(R"({"shapes": []})", "s.json"),
                    Catch::StartsWith("s.json: /shapes: expected a non-empty list of shapes"));
  CHECK_THROWS_WITH(
      parse_shapes_json(R"({"shapes": [{"m": 1, "n": 1, "k": 1}], "note": 1})", "s.json"),
      Catch::StartsWith("s.json: /note: unknown key 'note'"));
  CHECK_THROWS_WITH(parse_shapes_json(R"([1, 2])", "s.json"), Catch::StartsWith("s.json: "));
  CHECK_THROWS_WITH(parse_shapes_json("{\"shapes\": [", "s.json"),
                    Catch::StartsWith("s.json: line 1, column"));
}

TEST_CASE("shape lists load from files", "[cuda-tools]") {
  const auto path = std::filesystem::temp_directory_path() /
                    ("fabricsim-shapes-" + std::to_string(std::rand()) + ".json");
  {
    std::ofstream out(path);
    out << R"({"shapes": [{"m": 64, "n": 64, "k": 64, "dtype": "tf32"}]})";
  }
  const auto shapes = load_shapes_file(path.string());
  std::filesystem::remove(path);
  REQUIRE(shapes.size() == 1);
  CHECK(shapes[0].dtype == GemmDtype::kTf32);
  CHECK_THROWS_WITH(load_shapes_file("/nonexistent/shapes.json"),
                    "/nonexistent/shapes.json: cannot open file for reading");
}

TEST_CASE("dtype facts and sizes", "[cuda-tools]") {
  CHECK(gemm_input_bytes(GemmDtype::kFp8) == 1);
  CHECK(gemm_output_bytes(GemmDtype::kFp8) == 2);
  CHECK(gemm_input_bytes(GemmDtype::kTf32) == 4);
  CHECK(gemm_min_compute_capability(GemmDtype::kFp8) == 89);
  CHECK(gemm_min_compute_capability(GemmDtype::kBf16) == 80);
  const GemmShape s{8192, 8192, 8192, 1, GemmDtype::kBf16};
  CHECK(gemm_flops(s) == Approx(2.0 * 8192 * 8192 * 8192));
  CHECK(gemm_set_bytes(s) == 3ull * 8192 * 8192 * 2);
  const GemmShape f{16, 32, 64, 2, GemmDtype::kFp8};
  CHECK(gemm_set_bytes(f) == 2ull * ((16 * 64 + 64 * 32) * 1 + 16 * 32 * 2));
  for (const std::string& name : gemm_dtype_names()) {
    CHECK(gemm_dtype_name(parse_gemm_dtype(name)) == name);
  }
}

TEST_CASE("shape lists written by fabricsim calibrate shapes load", "[cuda-tools]") {
  const auto shapes = parse_shapes_json(
      R"({"comment": "GEMM shapes of one step", "shapes": [{"m": 1024, "n": 4096, "k": 2048,
          "batch": 1, "dtype": "fp8", "kernels_per_step_per_stage": 4096.0}]})",
      "shapes.json");
  REQUIRE(shapes.size() == 1);
  CHECK(shapes[0].m == 1024);
  CHECK(shapes[0].dtype == GemmDtype::kFp8);
  CHECK_THROWS_WITH(
      parse_shapes_json(R"({"shapes": [{"m": 1, "n": 1, "k": 1, "count": 2}]})", "shapes.json"),
      Catch::Contains("/shapes/0") && Catch::Contains("count"));
}
