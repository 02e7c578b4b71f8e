// The attention model against cuDNN's own SDPA training benchmark (calibration/data/
// cudnn-sdpa-2026, README there): cuDNN 9.22 on GB200 and GB300, 9.19 on GB200 and an H200, head
// widths 64-192, 2k-32k tokens, causal and not, banded (GPT-OSS's 128-token window), BF16, FP8
// and MXFP8. Blackwell's efficiencies, its softmax width and the FP8 speed-ups are fitted to
// these rows; the H200's are not (they come from calibration/data/h200-2026-12-04), so its rows
// are out of sample.

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "calibration/fit_quality.hpp"
#include "models/compute_model.hpp"
#include "models/compute_profile.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/source_file.hpp"
#include "topologies/gpu_spec.hpp"

using namespace fabricsim;
using calibration::median;
using models::AttentionKernel;

namespace {

struct Row {
  std::string gpu, model, dtype;
  int cudnn = 0;
  bool causal = false, backward = false;
  double batch = 0, seq = 0, heads = 0, width = 0, window = 0, seconds = 0;
};

std::vector<Row> rows() {
  const nlohmann::json doc = nlohmann::json::parse(testing::read_file(
      testing::source_file("calibration/data/cudnn-sdpa-2026", "attention.json")));
  std::vector<Row> out;
  for (const nlohmann::json& r : doc["rows"]) {
    Row x;
    x.gpu = r["gpu"];
    x.model = r["model"];
    x.dtype = r["dtype"];
    x.cudnn = r["cudnn"];
    x.causal = r["causal"];
    x.backward = r["backward"];
    x.batch = r["batch"];
    x.seq = r["seq"];
    x.heads = r["heads"];
    x.width = 0.5 * (r["head_dim_qk"].get<double>() + r["head_dim_v"].get<double>());
    x.window = r["window"];
    x.seconds = r["time_ms"].get<double>() * 1e-3;
    out.push_back(x);
  }
  return out;
}

const topologies::GpuSpec& gpu(const std::string& name) {
  return *topologies::find_gpu(name == "H200" ? "H200-SXM" : name);
}

/// The model's seconds for a row, at burst clock: cuDNN's kernel as the workload prices it.
double predict(const Row& x) {
  const topologies::GpuSpec& g = gpu(x.gpu);
  const bool banded = x.window > 0 && x.window < x.seq;
  const double keys = banded ? 2 * x.window - x.window * x.window / x.seq : x.seq;
  models::FlashAttention a;
  a.attended = keys * (x.causal ? 0.5 : 1.0);
  a.flops = 4.0 * x.batch * x.seq * a.attended * x.heads * x.width * (x.backward ? 2.5 : 1.0);
  a.sequence = x.seq;
  a.banded = banded;
  a.backward = x.backward;
  a.head_dim = x.width;
  a.fp8 = x.dtype != "bfloat16";
  a.block_scaled = x.dtype == "mxfp8";
  a.mla = x.model == "dsv3" || x.model == "kimiK26";
  return models::flash_attention_seconds(g, models::default_compute_profile(g), a);
}

/// Signed errors (predicted over measured, minus 1) of the rows `keep` selects.
template <class Keep>
std::vector<double> errors(const std::vector<Row>& all, Keep keep) {
  std::vector<double> out;
  for (const Row& x : all) {
    if (keep(x)) out.push_back(predict(x) / x.seconds - 1);
  }
  return out;
}

std::vector<double> magnitudes(std::vector<double> e) {
  for (double& v : e)
    v = std::abs(v);
  return e;
}

bool blackwell(const Row& x) {
  return x.gpu != "H200";
}

}  // namespace

TEST_CASE("cuDNN's benchmark: Blackwell's BF16 attention, fitted on GB200's Llama 3.1 rows",
          "[calibration][cudnn-sdpa]") {
  const std::vector<Row> all = rows();
  REQUIRE(all.size() == 490);
  for (const bool backward : {false, true}) {
    INFO((backward ? "backward" : "forward"));
    // The fit: GB200, Llama 3.1 405B's heads (64 of 128, 8 KV), causal and not, 2k-32k tokens.
    const std::vector<double> fit = errors(all, [&](const Row& x) {
      return x.gpu == "GB200" && x.model == "llama3.1" && x.dtype == "bfloat16" &&
             x.backward == backward;
    });
    REQUIRE(fit.size() == 10);
    CHECK(std::abs(median(fit)) < 0.02);
    CHECK(median(magnitudes(fit)) < 0.07);
    // Every full-attention BF16 row of both GPUs: Llama, DeepSeek-V3's and Kimi K2's MLA (width
    // 160), GB300 through the softmax width. Measured at this commit: forward within 5% on
    // median, MLA's backward 12-14% faster than the model.
    const std::vector<double> wide = errors(all, [&](const Row& x) {
      return blackwell(x) && x.window == 0 && x.dtype == "bfloat16" && x.backward == backward;
    });
    REQUIRE(wide.size() == 60);
    CHECK(median(magnitudes(wide)) < (backward ? 0.14 : 0.06));
  }
}

TEST_CASE("cuDNN's benchmark: Blackwell Ultra's gain is the softmax width's",
          "[calibration][cudnn-sdpa]") {
  // GB300 over GB200 on the same BF16 rows of width 128: the model's ratio is the exponential-rate
  // factor alone, within 5% of the measured median ratio in each direction.
  const std::vector<Row> all = rows();
  std::map<std::tuple<bool, bool, double>, double> gb200;
  for (const Row& x : all) {
    if (x.gpu == "GB200" && x.model == "llama3.1" && x.dtype == "bfloat16")
      gb200[{x.backward, x.causal, x.seq}] = x.seconds;
  }
  for (const bool backward : {false, true}) {
    std::vector<double> ratio;
    for (const Row& x : all) {
      if (x.gpu == "GB300" && x.model == "llama3.1" && x.dtype == "bfloat16" &&
          x.backward == backward)
        ratio.push_back(gb200.at({backward, x.causal, x.seq}) / x.seconds);
    }
    REQUIRE(ratio.size() == 10);
    const auto& ultra = gpu("GB300");
    CHECK(models::attention_exp_rate_factor(AttentionKernel::cudnn, 128, backward, ultra.exp_rate,
                                            ultra.generation) ==
          Approx(median(ratio)).epsilon(0.05));
  }
}

TEST_CASE("cuDNN's benchmark: FP8 attention's speed-ups", "[calibration][cudnn-sdpa]") {
  // Causal full attention, 4k-32k tokens (the rows the speed-ups are medians of), per GPU, head
  // layout (Llama 3.1's GQA heads; DeepSeek-V3's and Kimi K2's MLA), format and direction: the
  // model's BF16 over FP8 time against the measured one, each group's median within 2%. One
  // figure for every Blackwell layout had Llama's rows up to 45% fast (backward, GB200, FP8).
  // Hopper's FP8 backward runs slower than its BF16 one.
  const std::vector<Row> all = rows();
  const auto is_mla = [](const Row& x) { return x.model == "dsv3" || x.model == "kimiK26"; };
  std::map<std::tuple<std::string, std::string, bool, double>, const Row*> bf16;
  for (const Row& x : all) {
    if (x.dtype == "bfloat16" && x.causal && x.window == 0)
      bf16[{x.gpu, x.model, x.backward, x.seq}] = &x;
  }
  for (const char* gpu_name : {"GB200", "GB300"}) {
    for (const bool mla : {false, true}) {
      for (const char* dtype : {"fp8", "mxfp8"}) {
        for (const bool backward : {false, true}) {
          INFO(gpu_name << (mla ? " MLA " : " Llama ") << dtype
                        << (backward ? " backward" : " forward"));
          std::vector<double> e;
          for (const Row& x : all) {
            if (x.gpu != gpu_name || is_mla(x) != mla || x.window != 0 || !x.causal ||
                x.seq < 4096 || x.dtype != dtype || x.backward != backward)
              continue;
            const Row& b = *bf16.at({x.gpu, x.model, x.backward, x.seq});
            e.push_back((predict(b) / predict(x)) / (b.seconds / x.seconds) - 1);
          }
          REQUIRE(e.size() == (mla ? 8u : 4u));
          CHECK(std::abs(median(e)) < 0.02);
        }
      }
    }
  }
  const std::vector<double> hopper = errors(all, [](const Row& x) {
    return x.gpu == "H200" && x.model == "llama3.1" && x.causal && x.seq >= 4096 &&
           x.dtype == "fp8";
  });
  REQUIRE(hopper.size() == 8);
  CHECK(median(magnitudes(hopper)) < 0.12);
}

TEST_CASE("cuDNN's benchmark: banded layers compute whole tiles, Blackwell's FP8 backward all keys",
          "[calibration][cudnn-sdpa]") {
  const std::vector<Row> all = rows();
  // GPT-OSS's head width under windows of 128 keys (9.22) and 1,024 (9.19): BF16 on GB200,
  // GB300 and the H200 (out of sample), FP8 forward on Blackwell: within 20% on median per GPU
  // and direction.
  for (const char* g : {"GB200", "GB300", "H200"}) {
    for (const bool backward : {false, true}) {
      INFO(g << (backward ? " backward" : " forward"));
      const std::vector<double> e = errors(all, [&](const Row& x) {
        return x.gpu == g && x.window > 0 && x.backward == backward &&
               !(backward && x.dtype != "bfloat16");
      });
      REQUIRE_FALSE(e.empty());
      CHECK(median(magnitudes(e)) < 0.2);
    }
  }
  // cuDNN's FP8 backward on Blackwell does not skip the band: its time grows with the square of
  // the sequence (4x the tokens, over 10x the time), and the whole square prices it.
  std::map<std::tuple<std::string, int, std::string, double>, double> seconds;
  for (const Row& x : all) {
    if (blackwell(x) && x.window > 0 && x.backward)
      seconds[{x.gpu, x.cudnn, x.dtype, x.seq}] = x.seconds;
  }
  for (const auto& [key, t] : seconds) {
    const auto& [g, version, dtype, seq] = key;
    if (dtype == "bfloat16" || seq != 8192) continue;
    INFO(g << " cuDNN " << version << " " << dtype);
    CHECK(seconds.at({g, version, dtype, 32768.0}) > 10 * t);
    CHECK(seconds.at({g, version, "bfloat16", 32768.0}) <
          5 * seconds.at({g, version, "bfloat16", 8192.0}));
  }
  const std::vector<double> square = errors(all, [](const Row& x) {
    return blackwell(x) && x.window > 0 && x.backward && x.dtype != "bfloat16" && x.seq >= 8192;
  });
  REQUIRE(square.size() == 15);
  CHECK(median(magnitudes(square)) < 0.1);
}
