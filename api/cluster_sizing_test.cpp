#include "api/cluster_sizing.hpp"

#include <catch2/catch.hpp>

#include "sim/input_error.hpp"

using namespace fabricsim;
using namespace fabricsim::api;

namespace {

/// llama2-7b cut to 18 layers: small enough to size in a test, and 9 pipeline stages fill a
/// 72-GPU rack with a power-of-two batch.
nlohmann::json base() {
  return {{"system", {{"preset", "dgx-h100"}, {"gpus", 8}}},
          {"model", {{"preset", "llama2-7b"}, {"layers", 18}}},
          {"parallelism", nlohmann::json::object()},
          {"training", {{"global_batch", 256}, {"seq_len", 4096}}}};
}

}  // namespace

TEST_CASE("sizing: the smallest size that meets the deadline", "[size]") {
  SizingRequest r;
  r.tokens = 2e11;
  r.days = 10;
  r.systems = {"dgx-h100", "gb200-nvl72"};
  const std::vector<SizingRow> rows = size_clusters(base(), r, models::default_prices());
  REQUIRE(rows.size() == 2);
  for (const SizingRow& row : rows) {
    INFO(row.system << " " << row.reason);
    REQUIRE(row.met);
    CHECK(row.days <= 10);
    CHECK(row.gpus % row.domain == 0);
    CHECK(row.gpu_hours == Approx(row.days * 24 * row.gpus));
    // Time to train is the token budget over the plan's throughput.
    CHECK(row.days == Approx(2e11 / (row.best.tokens_per_s_per_gpu * row.gpus) / 86400));
    CHECK(row.scaling_efficiency > 0);
    CHECK(row.scaling_efficiency <= 1.05);
    CHECK(row.cost.facility_mw > 0);
    CHECK(row.cost.energy_mwh == Approx(row.cost.facility_mw * row.days * 24));
  }
  CHECK(rows[0].domain == 8);
  CHECK(rows[1].domain == 72);
  // Half the deadline needs at least as many GPUs.
  r.days = 5;
  const std::vector<SizingRow> faster = size_clusters(base(), r, models::default_prices());
  CHECK(faster[0].gpus >= rows[0].gpus);
}

TEST_CASE("sizing: a fixed GPU count, and deadlines no size meets", "[size]") {
  SizingRequest r;
  r.tokens = 1e11;
  r.gpus = 12;  // rounded up to two DGX servers
  r.systems = {"dgx-h100"};
  const SizingRow fixed = size_clusters(base(), r, models::default_prices()).front();
  CHECK(fixed.gpus == 16);
  CHECK(fixed.met);
  CHECK(fixed.days > 0);

  r.gpus.reset();
  r.days = 0.01;
  r.max_gpus = 64;
  const SizingRow impossible = size_clusters(base(), r, models::default_prices()).front();
  CHECK_FALSE(impossible.met);
  CHECK_THAT(impossible.reason, Catch::Contains("cannot meet 0.01 days with up to 64 GPUs"));
}

TEST_CASE("sizing: bad requests", "[size]") {
  const models::PriceTable prices = models::default_prices();
  SizingRequest r;
  r.systems = {"dgx-h100"};
  r.days = 10;
  CHECK_THROWS_WITH(size_clusters(base(), r, prices), Catch::Contains("positive token budget"));
  r.tokens = 1e12;
  r.systems = {"dgx-h900"};
  CHECK_THROWS_WITH(size_clusters(base(), r, prices), Catch::Contains("unknown system"));
  r.systems = {"dgx-h100"};
  r.gpus = 8;
  CHECK_THROWS_WITH(size_clusters(base(), r, prices), Catch::Contains("either a deadline"));
  r.gpus.reset();
  r.days = 0;
  CHECK_THROWS_WITH(size_clusters(base(), r, prices), Catch::Contains("positive number of days"));
}
