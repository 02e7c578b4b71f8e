#include "models/software_stack.hpp"

#include <catch2/catch.hpp>
#include <set>

using namespace fabricsim::models;

TEST_CASE("software presets: every fact has a source and ids are unique", "[software]") {
  std::set<std::string> ids;
  for (const SoftwareStack& s : software_presets()) {
    CHECK(ids.insert(s.id).second);
    CHECK_FALSE(s.facts.empty());
    for (const SoftwareFact& f : s.facts) {
      CHECK_FALSE(f.fact.empty());
      CHECK_FALSE(f.source.empty());
    }
  }
  CHECK_FALSE(default_software().documented);
}

TEST_CASE("a framework and version map to their preset", "[software]") {
  CHECK(software_for("nemo", "24.07", "2024-07").id == "nemo-24.07");
  // NeMo 2's performance scripts (25.04 on) fuse the loss; the releases between keep 24.07's.
  CHECK(software_for("nemo", "24.12", "2024-12").id == "nemo-24.07");
  CHECK(software_for("nemo", "25.07", "2025-07").id == "nemo-25.04");
  CHECK(find_software("nemo-25.04")->loss == LossKernel::fused);
  CHECK(find_software("nemo-25.04")->flop_count == FlopCount::megatron_lm);
  // The PyTorch-native fallback is reached by id (the case reader's FSDP rule), never by name.
  CHECK_FALSE(find_software("pytorch-fsdp")->documented);
  CHECK(software_for("megatron-core", "r0.8.0", "").id == "megatron-core-r0.8.0");
  CHECK(software_for("megatron-bridge", "25.11", "2025-11").id == "megatron-bridge-25.11");
  // Megatron-LM papers give no version, only a date: the newest preset not newer than it.
  CHECK(software_for("megatron-lm", "", "2021-04").id == "megatron-lm-2021");
  CHECK(software_for("megatron-lm", "", "2022-05").id == "megatron-lm-2022");
  CHECK(software_for("megatron-lm", "", "2023-01").id == "megatron-lm-2022");
  // Older than every preset: the oldest; an unknown version with a date: by date.
  CHECK(software_for("megatron-lm", "", "2019-01").id == "megatron-lm-2021");
  CHECK(software_for("megatron-bridge", "26.02", "2026-02").id == "megatron-bridge-25.11");
  // Its LoRA FLOP count changed in 26.02.01; later releases keep it.
  CHECK_FALSE(find_software("megatron-bridge-25.11")->bridge_lora_flops);
  // NeMo 24.07's summary counted LoRA that way already; NeMo 2's count is not established.
  CHECK(find_software("nemo-24.07")->bridge_lora_flops);
  CHECK_FALSE(find_software("nemo-25.04")->bridge_lora_flops);
  CHECK(software_for("megatron-bridge", "26.02.01", "2026-02").bridge_lora_flops);
  CHECK(software_for("megatron-bridge", "26.04.01", "2026-05").id == "megatron-bridge-26.02.01");
  CHECK(software_for("megatron-bridge", "26.06", "2026-06").bridge_lora_flops);
  // Its pre-training FLOP count changed in 26.06 (v0.5.0); the release after keeps it.
  CHECK(software_for("megatron-bridge", "26.04.01", "2026-05").bridge_flop_form ==
        BridgeFlopForm::v0_2);
  CHECK(software_for("megatron-bridge", "26.06.01", "2026-06").id == "megatron-bridge-26.06.01");
  CHECK(software_for("megatron-bridge", "26.06.01", "2026-06").bridge_flop_form ==
        BridgeFlopForm::v0_5);
  // 26.08 is its own preset: the release after 26.06.01's kernel regression.
  CHECK(software_for("megatron-bridge", "26.08", "2026-08").id == "megatron-bridge-26.08");
  CHECK(software_for("megatron-bridge", "26.10", "2026-10").id == "megatron-bridge-26.08");
  CHECK(software_for("llm-foundry", "", "").id == "llm-foundry");
  // A framework without a preset gets the default.
  CHECK(software_for("deepspeed", "0.14", "2024-05").id == "deepspeed-2023");
  CHECK(software_for("deepspeed", "", "2021-06").id == "deepspeed-2020");
  CHECK(software_for("metaseq", "", "").id == "metaseq");
  CHECK(software_for("megatron-deepspeed", "", "2022-07").id == "megatron-deepspeed");
  CHECK(software_for("megascale", "", "2024-02").id == "megascale");
  CHECK(software_for("hai-llm", "", "2024-12").id == "hai-llm");
  CHECK(software_for("hai-llm", "", "").moe_dispatcher == MoeDispatcher::deepep);
  // DeepSeek-V3's stack as its report and its published profile show it: DualPipe's overlap of
  // whole chunks, FlashAttention-3's Hopper kernels.
  CHECK(software_for("hai-llm", "", "").moe_a2a_overlap);
  CHECK(software_for("hai-llm", "", "").moe_a2a_overlap_scope == A2aOverlapScope::chunk);
  CHECK(software_for("hai-llm", "", "").attention == AttentionKernel::flash3);
  CHECK(software_for("meta-internal", "", "2024-07").id == "default");
  CHECK(software_for("unknown", "", "").id == "default");
}

TEST_CASE("the 2021-22 Megatron-LM stacks differ from the modern ones as documented",
          "[software]") {
  const SoftwareStack& old = *find_software("megatron-lm-2021");
  CHECK(old.attention == AttentionKernel::unfused);
  CHECK_FALSE(old.tp_comm_overlap);
  const SoftwareStack& nemo = *find_software("nemo-24.07");
  CHECK(nemo.attention == AttentionKernel::cudnn);
  CHECK(nemo.tp_comm_overlap);
  CHECK(nemo.bucket_bytes == 80e6);
  const SoftwareStack& foundry = *find_software("llm-foundry");
  CHECK(foundry.fsdp == FsdpImpl::pytorch_fsdp1);
  CHECK(foundry.attention == AttentionKernel::flash_triton);
  CHECK(foundry.loss == LossKernel::fused);
  // Megatron's vocab-parallel cross-entropy upcasts the logits until Megatron-Bridge turns on
  // Transformer Engine's fused kernel.
  CHECK(nemo.loss == LossKernel::fp32_upcast);
  CHECK(find_software("megatron-bridge-25.09")->loss == LossKernel::fused);
  CHECK(find_software("megatron-bridge-25.11")->loss == LossKernel::fused);
  CHECK(find_software("no-such") == nullptr);
}

TEST_CASE(
    "NVFP4 keeps no layer in BF16 on the Megatron-Core stacks and the paper's layers elsewhere",
    "[software]") {
  // Megatron-Core's first_last_layers_bf16 defaults to False and NeMo 2 has no NVFP4 recipe: the
  // NeMo-based MLPerf v5.1 NVFP4 runs (framework nemo 25.09) keep every layer in NVFP4.
  for (const char* id : {"megatron-core-r0.8.0", "nemo-24.07", "nemo-25.04",
                         "megatron-bridge-25.09", "megatron-bridge-26.06", "default"}) {
    INFO(id);
    const SoftwareStack* s = find_software(id);
    REQUIRE(s != nullptr);
    CHECK(s->nvfp4_bf16_first == 0);
    CHECK(s->nvfp4_bf16_last == 0);
  }
  CHECK(software_for("nemo", "25.09", "2025-09").nvfp4_bf16_last == 0);
  const auto states_policy = [](const SoftwareStack& s) {
    for (const SoftwareFact& f : s.facts) {
      if (f.fact.find("first_last_layers_bf16") != std::string::npos) return true;
    }
    return false;
  };
  CHECK(states_policy(*find_software("nemo-25.04")));
  CHECK(states_policy(*find_software("megatron-core-r0.8.0")));
  // Stacks without a policy of their own take the NVFP4 paper's recipe for its 62-block model.
  for (const char* id : {"torchtitan", "llm-foundry", "nemo-automodel"}) {
    INFO(id);
    CHECK(find_software(id)->nvfp4_bf16_first == Approx(2.0 / 62.0));
    CHECK(find_software(id)->nvfp4_bf16_last == Approx(8.0 / 62.0));
  }
}
