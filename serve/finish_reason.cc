// FinishReasonName apart from the engine, so that the request and response
// code (serve/openai_api.cc) links without it (its fuzz target does).
#include "serve/engine.h"

namespace swan {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "?";
}

}  // namespace swan
