#include "attention/span.h"

#include <stdexcept>

namespace swan {

std::string Span::ToString() const {
  if (window == 0) return "full";
  std::string s = blocks ? "blocks of " + std::to_string(window) + (offset ? " from " + std::to_string(offset) : "")
                         : "window " + std::to_string(window);
  if (sinks > 0) s += " + " + std::to_string(sinks) + " sinks";
  return s;
}

void ValidateSpan(const Span& span) {
  if (span.window < 0)
    throw std::invalid_argument("window must be >= 0 (0 = full attention), got " + std::to_string(span.window));
  if (span.sinks < 0) throw std::invalid_argument("sinks must be >= 0, got " + std::to_string(span.sinks));
  if (span.sinks > 0 && span.window == 0)
    throw std::invalid_argument("sinks (" + std::to_string(span.sinks) +
                                ") need a window: full attention already sees every key");
  if (span.blocks && (span.window == 0 || span.offset < 0 || span.offset >= span.window))
    throw std::invalid_argument("a block window needs a window and an offset in [0, window), got window " +
                                std::to_string(span.window) + " offset " + std::to_string(span.offset));
}

Span SpanFromFlashAttention(int32_t left, int32_t right, bool causal) {
  if (left < -1 || right < -1) throw std::invalid_argument("FlashAttention window_size entries must be >= -1");
  if (right != 0 && !causal)
    throw std::invalid_argument("FlashAttention window_size right = " + std::to_string(right) +
                                " lets a query see later keys; swan spans are causal");
  return Span{left < 0 ? 0 : left + 1, 0};
}

Span SpanFromLlamaCppSwa(int32_t n_swa) {
  if (n_swa < 0) throw std::invalid_argument("llama.cpp n_swa must be >= 0");
  return Span{n_swa, 0};
}

Span SpanFromHfSlidingWindow(int32_t sliding_window) { return Span{sliding_window > 0 ? sliding_window : 0, 0}; }

}  // namespace swan
