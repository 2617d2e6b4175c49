#include "cli/weights_option.h"

#include <string>

namespace swan::cli {

LoadOptions LoadOptionsFrom(const Args& args) {
  LoadOptions options;
  if (args.Has("--weights")) options.weights = ParseWeightType(args.Get("--weights", ""), "--weights");
  return options;
}

}  // namespace swan::cli
