#include "sim/json_reader.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::sim;

TEST_CASE("values carry file and pointer into errors", "[json][bad-input]") {
  const auto doc = parse_json_text(R"({"link": {"bandwidth": "fast", "count": -2}})", "topo.json");
  auto root = doc.root().as_object();
  auto link = root.required("link").as_object();
  CHECK_THROWS_WITH(link.required("bandwidth").as_bandwidth(),
                    Catch::Contains("topo.json: /link/bandwidth: expected a bandwidth"));
  CHECK_THROWS_WITH(link.required("count").as_positive_int(),
                    "topo.json: /link/count: expected a positive integer, got -2");
  CHECK_THROWS_WITH(link.required("latency"), "topo.json: /link/latency: missing required field");
}

TEST_CASE("unknown keys are errors that list the accepted keys", "[json][bad-input]") {
  const auto doc = parse_json_text(R"({"gpus": 8, "gpu": "h100"})", "s.json");
  auto root = doc.root().as_object();
  CHECK(root.required("gpus").as_positive_int() == 8);
  CHECK_THROWS_WITH(root.finish(), "s.json: /gpu: unknown key 'gpu' (expected one of: gpus)");
}

TEST_CASE("malformed JSON names line and column", "[json][bad-input]") {
  CHECK_THROWS_WITH(parse_json_text("{\n  \"a\": 1,\n  \"b\": }\n", "x.json"),
                    Catch::StartsWith("x.json: line 3, column 8: malformed JSON"));
  CHECK_THROWS_WITH(load_json_file("/nonexistent/file.json"), Catch::Contains("cannot open file"));
}

TEST_CASE("typed accessors accept good values", "[json]") {
  const auto doc = parse_json_text(
      R"({"t": "1.5 us", "b": "64 MiB", "n": 1024, "bw": "400 Gbps", "e": "ring", "f": 0.5,
          "arr": [1, 2, 3], "o": {"x": null}})",
      "ok.json");
  auto root = doc.root().as_object();
  CHECK(root.required("t").as_time().ps() == 1'500'000);
  CHECK(root.required("b").as_bytes().count() == 64.0 * 1024 * 1024);
  CHECK(root.required("n").as_bytes().count() == 1024);
  CHECK(root.required("bw").as_bandwidth().gbytes_per_s() == Approx(50));
  CHECK(root.required("e").as_enum({"ring", "tree"}) == "ring");
  CHECK(root.required("f").as_fraction() == 0.5);
  const auto arr = root.required("arr").as_array();
  REQUIRE(arr.size() == 3);
  CHECK(arr[2].pointer() == "/arr/2");
  auto o = root.required("o").as_object();
  CHECK_FALSE(o.optional("x").has_value());
  o.finish();
  root.finish();
}

TEST_CASE("zero and wrong-typed quantities are rejected", "[json][bad-input]") {
  const auto doc = parse_json_text(R"({"bw": "0 Gbps", "t": 5, "e": "bogus"})", "z.json");
  auto root = doc.root().as_object();
  CHECK_THROWS_WITH(root.required("bw").as_bandwidth(), Catch::Contains("positive bandwidth"));
  CHECK_THROWS_WITH(root.required("t").as_time(), Catch::Contains("written as a string"));
  CHECK_THROWS_WITH(root.required("e").as_enum({"ring", "tree"}),
                    Catch::Contains("expected one of ring, tree"));
}

TEST_CASE("pointer escaping follows RFC 6901", "[json]") {
  CHECK(json_pointer_child("/a", "b/c~d") == "/a/b~1c~0d");
}
