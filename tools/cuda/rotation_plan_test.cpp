#include "tools/cuda/rotation_plan.hpp"

#include <catch2/catch.hpp>

using namespace fabricsim::tools::cuda;

TEST_CASE("the rotating set exceeds the target", "[cuda-tools]") {
  constexpr uint64_t kMiB = 1 << 20;
  constexpr uint64_t kPlenty = uint64_t{1} << 40;
  CHECK(plan_rotation(10 * kMiB, 100 * kMiB, kPlenty).sets == 11);  // 110 MiB > 100 MiB
  CHECK(plan_rotation(30 * kMiB, 100 * kMiB, kPlenty).sets == 4);
  CHECK(plan_rotation(384 * kMiB, 100 * kMiB, kPlenty).sets == 1);  // one set is already cold
}

TEST_CASE("the rotating set is cut to free memory, or the shape is skipped", "[cuda-tools]") {
  constexpr uint64_t kMiB = 1 << 20;
  CHECK(plan_rotation(10 * kMiB, 100 * kMiB, 35 * kMiB).sets == 3);
  const RotationPlan none = plan_rotation(3ull << 30, 100 * kMiB, 1ull << 30);
  CHECK(none.sets == 0);
  CHECK(none.skipped ==
        "does not fit in device memory (needs 3.00 GiB for A, B and D, 1.00 GiB free)");
  CHECK_THROWS(plan_rotation(0, 1, 1));
}
