#include "models/pipeline_layout.hpp"

#include <fmt/format.h>

#include <cctype>

namespace fabricsim::models {
namespace {

constexpr size_t kMaxSymbols = 65'536;

/// Expands repeats and groups into the plain symbol sequence, by recursive descent.
class Expander {
 public:
  explicit Expander(std::string_view text) : text_(text) {}

  std::optional<std::string> run(std::string* error) {
    std::string out;
    if (!sequence(out, 0) || (pos_ < text_.size() && !fail("a part (E, t, m, L, |) or '('"))) {
      *error = error_;
      return std::nullopt;
    }
    return out;
  }

 private:
  bool fail(const std::string& expected) {
    if (error_.empty()) {
      error_ = pos_ < text_.size() ? fmt::format("expected {} at character {}, got '{}'", expected,
                                                 pos_ + 1, text_[pos_])
                                   : fmt::format("expected {} at the end", expected);
    }
    return false;
  }
  void skip_separators() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ',' || std::isspace(static_cast<unsigned char>(text_[pos_])) != 0)) {
      ++pos_;
    }
  }
  /// Items up to a ')' or the end.
  bool sequence(std::string& out, int depth) {
    for (skip_separators(); pos_ < text_.size() && text_[pos_] != ')'; skip_separators()) {
      std::string item;
      if (!atom(item, depth) || !repeat(item) || !append(out, item)) return false;
    }
    return true;
  }
  bool atom(std::string& item, int depth) {
    const char ch = text_[pos_];
    if (ch == 'E' || ch == 't' || ch == 'm' || ch == 'L' || ch == '|') {
      item = ch;
      ++pos_;
      return true;
    }
    if (ch != '(') return fail("a part (E, t, m, L, |) or '('");
    if (depth >= 16) return fail("at most 16 nested groups");
    ++pos_;
    if (!sequence(item, depth + 1)) return false;
    if (pos_ >= text_.size()) return fail("')'");
    ++pos_;
    return true;
  }
  bool repeat(std::string& item) {
    skip_separators();
    if (pos_ >= text_.size() || text_[pos_] != '*') return true;
    ++pos_;
    skip_separators();
    size_t count = 0;
    const size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
      count = count * 10 + static_cast<size_t>(text_[pos_] - '0');
      if (count > kMaxSymbols)
        return fail(fmt::format("a repeat count of at most {}", kMaxSymbols));
      ++pos_;
    }
    if (pos_ == start) return fail("a repeat count after '*'");
    if (count > 0 && item.size() > kMaxSymbols / count) return too_long();
    std::string repeated;
    for (size_t i = 0; i < count; ++i)
      repeated += item;
    item = std::move(repeated);
    return true;
  }
  bool append(std::string& out, const std::string& item) {
    if (out.size() + item.size() > kMaxSymbols) return too_long();
    out += item;
    return true;
  }
  bool too_long() {
    if (error_.empty())
      error_ = fmt::format("expected at most {} parts once repeated", kMaxSymbols);
    return false;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::optional<PipelineLayout> parse_pipeline_layout(std::string_view text, std::string* error) {
  const std::optional<std::string> symbols = Expander(text).run(error);
  if (!symbols) return std::nullopt;
  PipelineLayout layout;
  layout.stages.emplace_back();
  // Where the parts must come: 0 before the embedding, 1 decoders, 2 MTP modules, 3 after the
  // loss.
  int phase = 0;
  const auto fail = [&](const std::string& message) {
    *error = message;
    return std::nullopt;
  };
  for (const char ch : *symbols) {
    PipelineLayout::Stage& stage = layout.stages.back();
    const size_t index = layout.stages.size() - 1;
    switch (ch) {
      case '|':
        layout.stages.emplace_back();
        break;
      case 'E':
        if (phase != 0 || index != 0) return fail("expected the embedding (E) once, first");
        stage.embedding = true;
        phase = 1;
        break;
      case 't':
        if (phase != 1) {
          return fail(phase == 0 ? "expected the embedding (E) before the first decoder layer"
                                 : "expected decoder layers (t) before MTP modules and the loss");
        }
        ++stage.decoders;
        break;
      case 'm':
        if (phase != 1 && phase != 2) return fail("expected MTP modules (m) after the decoders");
        ++stage.mtp;
        phase = 2;
        break;
      default:  // 'L'
        if (phase != 1 && phase != 2) return fail("expected the loss (L) once, after the layers");
        stage.loss = true;
        phase = 3;
        break;
    }
  }
  if (phase != 3) return fail("expected the loss (L)");
  if (!layout.stages.back().loss) return fail("expected the loss (L) on the last stage");
  return layout;
}

std::string pipeline_layout_text(const PipelineLayout& layout) {
  std::string out;
  for (size_t i = 0; i < layout.stages.size(); ++i) {
    const PipelineLayout::Stage& s = layout.stages[i];
    if (i > 0) out += '|';
    if (s.embedding) out += 'E';
    out += std::string(static_cast<size_t>(s.decoders), 't');
    out += std::string(static_cast<size_t>(s.mtp), 'm');
    if (s.loss) out += 'L';
  }
  return out;
}

}  // namespace fabricsim::models
