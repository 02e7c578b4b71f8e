#include "api/training_case.hpp"

namespace fabricsim::api {

nlohmann::json training_case_scenario(const calibration::Case& c) {
  const calibration::CaseModel& m = *c.model;
  const calibration::CaseParallelism& p = *c.parallelism;
  nlohmann::json model = {{"name", m.name},
                          {"layers", m.layers},
                          {"hidden", m.hidden},
                          {"heads", m.heads},
                          // Unknown: MHA, the 4h MLP, Megatron's padded GPT-2 vocabulary, 2048.
                          {"kv_heads", m.kv_heads.value_or(m.heads)},
                          {"ffn", m.ffn.value_or(4 * m.hidden)},
                          {"vocab", m.vocab.value_or(51200)},
                          {"seq_len", m.seq_len.value_or(2048)}};
  // A 4h MLP is GELU-style (GPT) or squared ReLU (Nemotron), both two matrices; any other width
  // is the gated SwiGLU of Llama-style models (ffn ~ 8h/3).
  const int ffn = m.ffn.value_or(4 * m.hidden);
  model["mlp"] = ffn == 4 * m.hidden ? "gelu" : "swiglu";
  if (m.mla) {
    // MLA has no separate key/value heads: every query head has its own compressed k/v.
    model["kv_heads"] = m.heads;
    model["mla"] = {{"q_lora_rank", m.mla->q_lora_rank},
                    {"kv_lora_rank", m.mla->kv_lora_rank},
                    {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                    {"qk_rope_head_dim", m.mla->qk_rope_head_dim},
                    {"v_head_dim", m.mla->v_head_dim}};
  }
  if (m.moe) {
    // Unstated MoE fields (README: one documented default): no shared experts, no leading dense
    // layers, every layer MoE; a shared expert of unstated width is as wide as a routed one.
    const calibration::CaseMoe& e = *m.moe;
    nlohmann::json moe = {{"experts", e.experts.value_or(0)},
                          {"top_k", e.top_k.value_or(0)},
                          {"expert_ffn", e.expert_ffn.value_or(ffn)},
                          {"shared_experts", e.shared_experts.value_or(0)},
                          {"dense_layers", e.dense_layers.value_or(0)},
                          {"moe_layer_freq", e.moe_layer_freq.value_or(1)}};
    if (e.shared_experts.value_or(0) > 0)
      moe["shared_expert_ffn"] = e.shared_expert_ffn.value_or(e.expert_ffn.value_or(ffn));
    model["moe"] = std::move(moe);
  }
  const int tp = p.tp.value_or(1);
  const int pp = p.pp.value_or(1);
  const int cp = p.cp.value_or(1);
  const int dp = p.dp.value_or(c.gpus / (tp * pp * cp));
  const int mb = p.micro_batch.value_or(1);
  // Unknown global batch: 8 micro-batches per pipeline stage per data-parallel rank.
  const int gbs = p.global_batch.value_or(dp * mb * 8 * pp);
  nlohmann::json parallelism = {{"tp", tp},
                                {"pp", pp},
                                {"cp", cp},
                                {"dp", dp},
                                {"ep", p.ep.value_or(1)},
                                {"vp", p.vp.value_or(1)},
                                {"micro_batch", mb},
                                {"sequence_parallel", p.sequence_parallel.value_or(tp > 1)},
                                {"zero", p.fsdp.value_or(false) ? 3 : p.zero.value_or(1)},
                                {"recompute", p.recompute.value_or("selective")},
                                // Layers that do not divide into pp x vp stages: Megatron-Core
                                // and NeMo give the first and last stages fewer layers (they
                                // also hold the embedding and the loss; Megatron's
                                // account_for_embedding/loss_in_pipeline_split).
                                {"balanced_pipeline", true}};
  nlohmann::json training = {{"task", c.task.value_or("pretrain")},
                             {"precision", c.precision.value_or("bf16")},
                             {"global_batch", gbs}};
  // The software the source ran picks the stack preset (models/software_stack.cpp); a case
  // without one gets the documented default.
  nlohmann::json software = {{"framework", "unknown"}};
  if (c.framework) {
    software["framework"] = c.framework->name;
    if (c.framework->version) software["version"] = *c.framework->version;
    if (c.framework->released) software["released"] = *c.framework->released;
  }
  return {{"system", {{"preset", c.system}, {"gpus", c.gpus}}},
          {"software", software},
          {"model", model},
          {"parallelism", parallelism},
          {"training", training},
          {"simulation", {{"backend", "flow"}, {"ignore_memory", true}}}};
}

}  // namespace fabricsim::api
