#include "models/model_presets.hpp"

namespace fabricsim::models {
namespace {

/// GPT-style: MHA, GELU MLP of 4h, biases and LayerNorm, head width h/heads.
TransformerConfig gpt(std::string name, int layers, int hidden, int heads, int vocab, bool tied,
                      std::string source) {
  TransformerConfig c;
  c.name = std::move(name);
  c.layers = layers;
  c.hidden = hidden;
  c.ffn = 4 * hidden;
  c.heads = heads;
  c.kv_heads = heads;
  c.head_dim = hidden / heads;
  c.vocab = vocab;
  c.seq_len = 2048;
  c.tied_embeddings = tied;
  c.mlp = MlpKind::gelu;
  c.bias = true;
  // GPT-2/3's learned absolute position embeddings (Radford et al. 2019; Brown et al. 2020,
  // section 2.1), Megatron-LM's default (--position-embedding-type learned_absolute).
  c.position = PositionEncoding::learned;
  c.source = std::move(source);
  return c;
}

/// Llama-style: SwiGLU, RMSNorm, no biases, untied embeddings, head width 128.
TransformerConfig llama(std::string name, int layers, int hidden, int ffn, int heads, int kv_heads,
                        int vocab, int seq_len, std::string source) {
  TransformerConfig c;
  c.name = std::move(name);
  c.layers = layers;
  c.hidden = hidden;
  c.ffn = ffn;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.vocab = vocab;
  c.seq_len = seq_len;
  c.tied_embeddings = false;
  c.mlp = MlpKind::swiglu;
  c.bias = false;
  c.source = std::move(source);
  return c;
}

TransformerConfig mixtral(std::string name, int layers, int hidden, int heads, int expert_ffn,
                          int vocab, int seq_len, std::string source) {
  TransformerConfig c = llama(std::move(name), layers, hidden, expert_ffn, heads, 8, vocab, seq_len,
                              std::move(source));
  MoeConfig m;
  m.experts = 8;
  m.top_k = 2;
  m.expert_ffn = expert_ffn;
  // No capacity factor is published; dropless, as the MegaBlocks kernels the paper serves with.
  m.capacity_factor = 0;
  c.moe = m;
  return c;
}

TransformerConfig deepseek_v3() {
  TransformerConfig c = llama(
      "deepseek-v3", 61, 7168, 18432, 128, 128, 129280, 4096,
      "DeepSeek-V3 Technical Report (arXiv:2412.19437) sec. 4.2 and "
      "deepseek-ai/DeepSeek-V3 config.json: 61 layers, hidden 7168, 128 heads, MLA q_lora_rank "
      "1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128; first_k_dense_replace 3 "
      "with intermediate_size 18432; 256 routed experts, 8 per token, 1 shared, "
      "moe_intermediate_size 2048; vocab 129280; untied; aux-loss-free balancing; seq_len "
      "4096 is the pre-training length (the config's 163840 is after context extension); "
      "num_nextn_predict_layers 1 (the multi-token-prediction module trained with it, sec. "
      "2.2). Published 671B total, 37B activated, without the 14B MTP module.");
  c.head_dim = 128 + 64;  // q/k head width; MLA's own dims are what the counts use
  c.mtp_layers = 1;
  MoeConfig m;
  m.experts = 256;
  m.top_k = 8;
  m.expert_ffn = 2048;
  m.shared_experts = 1;
  m.shared_expert_ffn = 2048;
  m.dense_layers = 3;
  m.moe_layer_freq = 1;
  // The report's sec. 2.1.2: no token dropping in training or inference.
  m.capacity_factor = 0;
  m.router_aux_free = true;
  c.moe = m;
  c.mla = MlaConfig{1536, 512, 128, 64, 128};
  return c;
}

/// Qwen3 MoE: GQA with head width 128 (not hidden / heads), QK-norm (the technical report's
/// section 2: QKV-bias removed, QK-norm introduced), SwiGLU experts, no shared expert, every
/// layer MoE, untied embeddings.
TransformerConfig qwen3_moe(std::string name, int layers, int hidden, int heads, int expert_ffn,
                            int ffn, std::string source) {
  TransformerConfig c =
      llama(std::move(name), layers, hidden, ffn, heads, 4, 151936, 4096, std::move(source));
  c.head_dim = 128;
  c.qk_norm = true;
  MoeConfig m;
  m.experts = 128;
  m.top_k = 8;
  m.expert_ffn = expert_ffn;
  m.capacity_factor = 0;  // the report's global-batch load balancing routes without dropping
  c.moe = m;
  return c;
}

TransformerConfig gpt_oss_120b() {
  TransformerConfig c = llama(
      "gpt-oss-120b", 36, 2880, 2880, 64, 8, 201088, 4096,
      "openai/gpt-oss-120b config.json and its model card (arXiv:2508.10925, Table 1): 36 "
      "layers, hidden 2880, 64 query heads of 64, 8 KV heads, 128 experts top-4 of width 2880 "
      "with the clamped gate x sigmoid(1.702 x) (up + 1) (swiglu_limit 7), vocab 201088, "
      "untied; its attention and expert biases are not counted as parameters (<0.1%), but applying "
      "the expert biases is timed; 116.83B total, 5.13B "
      "active counting the embedding once. Every other layer, from the first, attends "
      "through a sliding window of 128 tokens (config.json sliding_window 128, layer_types "
      "alternating sliding_attention and full_attention). "
      "The training length is not published (4096 here); the attention sinks (a learned "
      "softmax offset per head) are not modelled.");
  c.head_dim = 64;
  // YaRN rotary scaling (config.json rope_scaling {"rope_type": "yarn", "factor": 32}); Megatron
  // runs it as position_embedding_type "yarn" (Megatron-Bridge GPTOSSProvider).
  c.position = PositionEncoding::yarn;
  c.sliding_window = 128;
  c.full_attention_every = 2;
  c.mlp = MlpKind::quick_geglu;
  MoeConfig m;
  m.experts = 128;
  m.top_k = 4;
  m.expert_ffn = 2880;
  m.capacity_factor = 0;
  m.expert_bias = true;
  c.moe = m;
  return c;
}

/// Nemotron-style (NeMo's NemotronConfig): squared-ReLU MLP of 4h (not gated), no bias, untied
/// embeddings, the 256k-token vocabulary, sequence 4096, head width h/heads.
TransformerConfig nemotron(std::string name, int layers, int hidden, int heads, int kv_heads,
                           std::string source) {
  // GPT's shape with Nemotron's MLP, KV heads, sequence and no biases.
  TransformerConfig c =
      gpt(std::move(name), layers, hidden, heads, 256000, false, std::move(source));
  c.kv_heads = kv_heads;
  c.seq_len = 4096;
  c.mlp = MlpKind::squared_relu;
  c.bias = false;
  // Rotary (Nemotron-4 15B, arXiv:2402.16819, section 2.1; NeMo NemotronConfig
  // position_embedding_type "rope", over half of each head: rotary_percent 0.5).
  c.position = PositionEncoding::rope;
  return c;
}

std::vector<TransformerConfig> build_presets() {
  std::vector<TransformerConfig> out;
  out.push_back(gpt("gpt3-175b", 96, 12288, 96, 50257, true,
                    "Brown et al. 2020, Language Models are Few-Shot Learners (arXiv:2005.14165) "
                    "Table 2.1: 96 layers, d_model 12288, 96 heads of 128, d_ff = 4 d_model, "
                    "context 2048; GPT-2 BPE vocabulary of 50257, tied input/output embeddings."));
  // Megatron SC'21 Table 1: {name, heads, hidden, layers}; vocab 51200, seq 2048.
  struct MegatronRow {
    const char* name;
    int heads;
    int hidden;
    int layers;
  };
  static const MegatronRow kMegatron[] = {
      {"megatron-1.7b", 24, 2304, 24},      {"megatron-3.6b", 32, 3072, 30},
      {"megatron-7.5b", 32, 4096, 36},      {"megatron-18.4b", 48, 6144, 40},
      {"megatron-39.1b", 64, 8192, 48},     {"megatron-76.1b", 80, 10240, 60},
      {"megatron-145.6b", 96, 12288, 80},   {"megatron-310.1b", 128, 16384, 96},
      {"megatron-529.6b", 128, 20480, 105}, {"megatron-1t", 160, 25600, 128},
  };
  for (const MegatronRow& row : kMegatron) {
    out.push_back(
        gpt(row.name, row.layers, row.hidden, row.heads, 51200, true,
            "Narayanan et al. SC'21, Efficient Large-Scale Language Model Training on GPU "
            "Clusters Using Megatron-LM (arXiv:2104.04473) Table 1: heads, hidden, "
            "layers; vocab 51200 and seq 2048; GPT architecture (ffn 4h, GELU, MHA, "
            "biases; tied embeddings, as the paper's parameter formula counts V*h "
            "once)."));
  }
  const char* llama2 =
      "Touvron et al. 2023, Llama 2 (arXiv:2307.09288) Table 1 and "
      "meta-llama/Llama-2-{7b,13b,70b}-hf "
      "config.json: vocab 32000, context 4096, SwiGLU, RMSNorm, no bias, untied embeddings";
  out.push_back(llama("llama2-7b", 32, 4096, 11008, 32, 32, 32000, 4096,
                      std::string(llama2) + "; 7B: 32 layers, hidden 4096, ffn 11008, 32 heads."));
  out.push_back(llama("llama2-13b", 40, 5120, 13824, 40, 40, 32000, 4096,
                      std::string(llama2) + "; 13B: 40 layers, hidden 5120, ffn 13824, 40 heads."));
  out.push_back(llama(
      "llama2-70b", 80, 8192, 28672, 64, 8, 32000, 4096,
      std::string(llama2) + "; 70B: 80 layers, hidden 8192, ffn 28672, 64 heads, GQA 8 KV heads."));
  const char* llama3 =
      "Llama 3 Herd of Models (arXiv:2407.21783) Table 3 and the config.json of "
      "meta-llama/Meta-Llama-3-8B, Meta-Llama-3-70B and Llama-3.1-405B: vocab 128256, SwiGLU, "
      "RMSNorm, no bias, untied, 8 KV heads; seq_len 8192 is the paper's initial pre-training "
      "length (3.1 configs list 131072 after long-context training)";
  out.push_back(llama("llama3-8b", 32, 4096, 14336, 32, 8, 128256, 8192,
                      std::string(llama3) + "; 8B: 32 layers, hidden 4096, ffn 14336, 32 heads."));
  out.push_back(llama("llama3-70b", 80, 8192, 28672, 64, 8, 128256, 8192,
                      std::string(llama3) + "; 70B: 80 layers, hidden 8192, ffn 28672, 64 heads."));
  out.push_back(
      llama("llama3-405b", 126, 16384, 53248, 128, 8, 128256, 8192,
            std::string(llama3) + "; 405B: 126 layers, hidden 16384, ffn 53248, 128 heads."));
  out.push_back(mixtral(
      "mixtral-8x7b", 32, 4096, 32, 14336, 32000, 32768,
      "Jiang et al. 2024, Mixtral of Experts (arXiv:2401.04088) Table 1 and "
      "mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, hidden 4096, 32 heads, 8 KV heads, 8 "
      "experts top-2 of ffn 14336 (SwiGLU), vocab 32000, untied; seq_len is Table 1's "
      "context_len and the config's max_position_embeddings, 32768 (a separate training length "
      "is not published). Published 46.7B total, 12.9B active."));
  out.push_back(mixtral(
      "mixtral-8x22b", 56, 6144, 48, 16384, 32768, 65536,
      "mistralai/Mixtral-8x22B-v0.1 config.json: 56 layers, hidden 6144, 48 heads, 8 KV heads, 8 "
      "experts top-2 of ffn 16384 (SwiGLU), vocab 32768, untied; seq_len is the config's "
      "max_position_embeddings 65536. Mistral's announcement (mistral.ai/news/mixtral-8x22b): 141B "
      "total, 39B active."));
  out.push_back(deepseek_v3());
  out.push_back(nemotron(
      "nemotron-4-340b", 96, 18432, 96, 8,
      "Nemotron-4 340B Technical Report (arXiv:2406.11704) Table 1 and Nemotron-4 15B "
      "(arXiv:2402.16819) architecture: 96 layers, hidden 18432, 96 heads, 8 KV heads, seq 4096, "
      "vocab 256000, squared-ReLU MLP of 4h (not gated), no bias, untied input/output embeddings; "
      "published 9.4B embedding + 331.6B non-embedding parameters."));
  const char* nemotron3 =
      "NeMo nemo/collections/llm/gpt/model/nemotron.py Nemotron3Config8B (32 layers, hidden 4096, "
      "ffn 16384, 32 heads) and Nemotron3Config22B (40 layers, hidden 6144, ffn 24576, 48 heads): "
      "NemotronConfig's squared-ReLU MLP, no bias, untied embeddings, seq 4096, MHA; vocabulary "
      "256000, NeMo's LLM_VOCAB_SIZE_MAP['nemotron'] "
      "(nemo/collections/common/parts/perf_metrics_utils.py), the 256k tokenizer of "
      "nvidia/nemotron-3-8b-base-4k";
  out.push_back(nemotron("nemotron-3-8b", 32, 4096, 32, 32, nemotron3));
  out.push_back(nemotron("nemotron-3-22b", 40, 6144, 48, 48, nemotron3));
  const char* qwen3 =
      "Qwen3 Technical Report (arXiv:2505.09388) Table 2 and sec. 3.2 (pre-training sequences of "
      "4096) and the Qwen/Qwen3-*-A*B config.json files: GQA 4 KV heads, head_dim 128, 128 "
      "experts top-8, no shared expert, vocab 151936, untied";
  out.push_back(qwen3_moe("qwen3-30b-a3b", 48, 2048, 32, 768, 6144,
                          std::string(qwen3) +
                              "; 30B-A3B: 48 layers, hidden 2048, 32 query heads, expert "
                              "width 768 (30.5B total, 3.3B activated)."));
  out.push_back(qwen3_moe("qwen3-235b-a22b", 94, 4096, 64, 1536, 12288,
                          std::string(qwen3) +
                              "; 235B-A22B: 94 layers, hidden 4096, 64 query heads, expert "
                              "width 1536 (235B total, 22B activated)."));
  out.push_back(gpt_oss_120b());
  return out;
}

}  // namespace

const std::vector<TransformerConfig>& model_presets() {
  static const std::vector<TransformerConfig> presets = build_presets();
  return presets;
}

const TransformerConfig* find_model(std::string_view name) {
  for (const TransformerConfig& c : model_presets()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string model_names() {
  std::string out;
  for (const TransformerConfig& c : model_presets()) {
    if (!out.empty()) out += ", ";
    out += c.name;
  }
  return out;
}

}  // namespace fabricsim::models
