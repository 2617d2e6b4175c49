// `--weights TYPE` for the commands that load a model: the type its linear
// layers are held in, converted as they load (see LoadOptions).
#pragma once

#include "cli/args.h"
#include "model/model.h"

namespace swan::cli {

// LoadOptions from --weights; as stored when absent. Throws
// std::invalid_argument for an unknown type.
LoadOptions LoadOptionsFrom(const Args& args);

}  // namespace swan::cli
