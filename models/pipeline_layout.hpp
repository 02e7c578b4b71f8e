#pragma once
// Megatron-Core's pipeline layout (pipeline_model_parallel_layout): which parts of the model each
// virtual pipeline stage builds, written as a string. `E` is the embedding, `t` a decoder layer,
// `m` a multi-token-prediction module, `L` the output head and the loss; `|` ends a stage; `X*n`
// and `(...)*n` repeat; `,` and spaces only separate. "Et*4|(t*4|)*14tmL" is DeepSeek-V3's 61
// layers and its MTP module on 16 stages. Stages are listed chunk-major, as Megatron-Core lists
// them: virtual stage v is model chunk v / pp of pipeline rank v % pp.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fabricsim::models {

struct PipelineLayout {
  struct Stage {
    int decoders = 0;  ///< decoder layers
    int mtp = 0;       ///< multi-token-prediction modules
    bool embedding = false;
    bool loss = false;  ///< the output head(s) and the loss
    friend bool operator==(const Stage&, const Stage&) = default;
  };
  std::vector<Stage> stages;  ///< per virtual stage, chunk-major
  friend bool operator==(const PipelineLayout&, const PipelineLayout&) = default;
};

/// Parses a layout string. The parts must come in the model's order, E t... m... L, with the
/// embedding on the first stage and the loss on the last; nullopt with `*error` (what was
/// expected, at which character) otherwise. Repeats may expand to at most 65,536 symbols.
std::optional<PipelineLayout> parse_pipeline_layout(std::string_view text, std::string* error);

/// The layout written back as a string that parses to it (no repeats).
std::string pipeline_layout_text(const PipelineLayout& layout);

}  // namespace fabricsim::models
