#include "models/megatron_bridge_flops.hpp"

#include <catch2/catch.hpp>

#include "models/model_presets.hpp"

using namespace fabricsim::models;

TEST_CASE("Megatron-Bridge's FLOPs of Qwen3-30B-A3B, worked by hand", "[metrics][moe]") {
  // h 2048, 48 layers, 32 query heads of 128 (not 2048/32), 4 KV heads, seq 4096, 128 experts
  // top-8 of width 768 with a SiLU gate, vocab 151936 (= 1187 x 128, no padding at tp 1):
  //   experts    12 h (768 x 8 x 3/2) L            = 12 x 2048 x 9216 x 48     = 10 871 635 968
  //   attention  12 L h^2 (1 + 4/32 + 4096/4096/2 x 2) ... in flop_utils' form:
  //              12 x 48 x 2048^2 x (1 + 0.125 + 1) x (128 x 32 / 2048) = 10 267 656 192
  //   logits     6 x 2048 x 151936                                       =  1 866 989 568
  // total 23 006 281 728 per token. Megatron-Bridge's published TFLOP/s over tokens/s of its
  // Qwen3-30B-A3B rows is 23.0e9 on every system (666e12 / 28934 = 23.02e9 on GB300).
  const TransformerConfig& q = *find_model("qwen3-30b-a3b");
  CHECK(megatron_bridge_flops_per_token(q, 4096, 1, BridgeFlopForm::v0_2) ==
        Approx(23006281728.0).epsilon(1e-12));
  // The router GEMM (2 h experts per layer and token) is in the GEMM count, not in Bridge's.
  CHECK(megatron_bridge_flops_per_token(q, 4096, 1, BridgeFlopForm::v0_2) <
        3.0 * flops_per_token(q).total(/*causal=*/true));
}

TEST_CASE("Megatron-Bridge counts a non-SiLU gate as ungated and pads the vocabulary",
          "[metrics][moe]") {
  const TransformerConfig& oss = *find_model("gpt-oss-120b");
  TransformerConfig silu = oss;
  silu.mlp = MlpKind::swiglu;
  // The expert term 12 h expert_ffn top_k L g differs by g = 1 against 3/2.
  const double experts = 12.0 * 2880 * 2880 * 4 * 36;
  CHECK(megatron_bridge_flops_per_token(silu, 8192, 1, BridgeFlopForm::v0_2) -
            megatron_bridge_flops_per_token(oss, 8192, 1, BridgeFlopForm::v0_2) ==
        Approx(0.5 * experts));
  // 201088 = 1571 x 128; at tp 4 the vocabulary pads to 393 x 512 = 201216: 6 h x 128 more.
  CHECK(megatron_bridge_flops_per_token(oss, 8192, 4, BridgeFlopForm::v0_2) -
            megatron_bridge_flops_per_token(oss, 8192, 1, BridgeFlopForm::v0_2) ==
        Approx(6.0 * 2880 * 128));
}

TEST_CASE("Megatron-Bridge's MLA count of DeepSeek-V3", "[metrics][moe]") {
  // 3 dense layers of 18432, 58 MoE layers of 8 x 2048 routed + 2048 shared, SiLU gate:
  //   MLP 12 h (18432 x 3 + 2048 x 9 x 58) x 3/2 = 12 x 7168 x 1 124 352 x 1.5 = 145 068 392 448
  //   MLA 6 x 61 x (1536 (7168 + 128 x 192 + 1) + 512 (7168 + 128 x 256 + 1) + 7168 x 64
  //       + 128 x 128 x 7168 + 4096 x 128 x 192 / 2 + 4096 x 128 x 128 / 2)
  //       = 6 x 61 x 270 993 408 = 99 183 587 328
  //   logits 6 x 7168 x 129280 = 5 560 074 240 (129280 = 1010 x 128)
  // total 249 812 054 016 per token; Bridge's published DeepSeek-V3 (w/o MTP) rows give 249.7e9
  // as TFLOP/s over tokens/s (961e12 / 3848 on GB300).
  TransformerConfig d = *find_model("deepseek-v3");
  d.mtp_layers = 0;
  const double mlp = 12.0 * 7168 * (18432.0 * 3 + 2048.0 * 9 * 58) * 1.5;
  const double mla =
      6.0 * 61 *
      (1536.0 * (7168 + 128 * 192 + 1) + 512.0 * (7168 + 128 * 256 + 1) + 7168.0 * 64 +
       128.0 * 128 * 7168 + 4096.0 * 128 * 192 / 2 + 4096.0 * 128 * 128 / 2);
  const double logits = 6.0 * 7168 * 129280;
  CHECK(megatron_bridge_flops_per_token(d, 4096, 1, BridgeFlopForm::v0_2) ==
        Approx(mlp + mla + logits));
  CHECK(megatron_bridge_flops_per_token(d, 4096, 1, BridgeFlopForm::v0_2) ==
        Approx(249812054016.0).epsilon(1e-12));
}

TEST_CASE("Megatron-Bridge's LoRA count: two thirds of the frozen model, attention per document",
          "[metrics]") {
  // The frozen term is the pre-training form without attention scores (seq 0) over an unpadded
  // vocabulary (Llama 3's 128256 is 1002 x 128, so the two agree at tp 1); the documents'
  // attention, 12 L h D, is counted in full.
  const TransformerConfig& llama = *find_model("llama3-70b");
  const double L = llama.layers, h = llama.hidden;
  const double frozen = megatron_bridge_flops_per_token(llama, 0, 1, BridgeFlopForm::v0_2);
  for (int d : {128, 256, 4096}) {
    CHECK(megatron_bridge_lora_flops_per_token(llama, d) ==
          Approx(frozen * 2.0 / 3.0 + 12.0 * L * h * d).epsilon(1e-12));
  }
  // By hand at D = 256: 80 x 8192^2 x (12 + 1.5 + 63 + 1.1743...) x 2/3 + 12 x 80 x 8192 x 256
  // = 2.7818e11 + 2.013e9 = 2.802e11; the 26.06 summary's Llama 3 70B LoRA rows report
  // 1731e12 / 6206 = 2.789e11 per token (GB200 FP8).
  CHECK(megatron_bridge_lora_flops_per_token(llama, 256) == Approx(2.802e11).epsilon(1e-3));
}

TEST_CASE("Megatron-Bridge counts DeepSeek-V3's MTP module as one more MoE layer and head",
          "[metrics][moe]") {
  // flop_utils.py (v0.2.0): mtp_num_layers adds a layer of the last layer's kind to the MLP and
  // attention terms, 6 (3h + 2h^2) for the module's norms and eh_proj, and one more logits term:
  //   12 x 7168 x 2048 x 9 x 3/2 = 2 378 170 368; MLA 6 x 270 993 408 = 1 625 960 448;
  //   6 x (3 x 7168 + 2 x 7168^2) = 616 691 712; logits 5 560 074 240
  // total 259 992 950 784 per token. Bridge's DeepSeek-V3 rows run with the module give 260.0e9
  // (589e12 / 2265 on B200, 25.09; 557e12 / 2139 w/ MTP, 25.11: 260.4e9).
  const TransformerConfig& d = *find_model("deepseek-v3");  // the preset trains its module
  REQUIRE(d.mtp_layers == 1);
  CHECK(megatron_bridge_flops_per_token(d, 4096, 1, BridgeFlopForm::v0_2) ==
        Approx(249812054016.0 + 2378170368.0 + 1625960448.0 + 616691712.0 + 5560074240.0)
            .epsilon(1e-12));
  CHECK(megatron_bridge_flops_per_token(d, 4096, 1, BridgeFlopForm::v0_2) ==
        Approx(259992950784.0).epsilon(1e-12));
}

TEST_CASE("From v0.5.0 Megatron-Bridge counts every gate and the windowed layers' context",
          "[metrics][moe]") {
  // GPT-OSS 120B at s = 4096: its quick-GELU experts gain the gate, 12 h (2880 x 4 x 1/2) L, and
  // its 18 windowed layers (window (128, 0): W = 129 keys) count the mean causal context
  // 129 - 129 x 128 / 8192 = 126.984375 instead of s/2 = 2048, 12 x 64 x 64 per unit and layer.
  const TransformerConfig& oss = *find_model("gpt-oss-120b");
  const double old_form = megatron_bridge_flops_per_token(oss, 4096, 1, BridgeFlopForm::v0_2);
  const double gate = 12.0 * 2880 * 2880 * 4 * 0.5 * 36;
  const double window = 12.0 * 18 * 64 * 64 * (2048 - (129 - 129.0 * 128 / (2 * 4096)));
  CHECK(megatron_bridge_flops_per_token(oss, 4096, 1, BridgeFlopForm::v0_5) ==
        Approx(old_form + gate - window).epsilon(1e-12));
  // 2.7164e10 per token before, 3.2631e10 after: the published TFLOP/s over tokens/s of the
  // GPT-OSS rows are 524e12 / 19275 = 2.7185e10 in the 26.04 summary (GB300 BF16) and
  // 1081e12 / 33166 = 3.2594e10 in 26.06's (GB300 MXFP8), TFLOP/s printed as integers.
  CHECK(old_form == Approx(2.7185e10).epsilon(2e-3));
  CHECK(megatron_bridge_flops_per_token(oss, 4096, 1, BridgeFlopForm::v0_5) ==
        Approx(3.2594e10).epsilon(2e-3));
  // A window as long as the sequence counts s/2, and a model without window or with a SiLU gate
  // counts as before.
  CHECK(megatron_bridge_flops_per_token(oss, 128, 1, BridgeFlopForm::v0_5) ==
        Approx(megatron_bridge_flops_per_token(oss, 128, 1, BridgeFlopForm::v0_2) + gate)
            .epsilon(1e-12));
  const TransformerConfig& q = *find_model("qwen3-30b-a3b");
  CHECK(megatron_bridge_flops_per_token(q, 4096, 1, BridgeFlopForm::v0_5) ==
        megatron_bridge_flops_per_token(q, 4096, 1, BridgeFlopForm::v0_2));
}
