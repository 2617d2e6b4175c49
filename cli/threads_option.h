// `-t N` / `--threads N`: the threads a command computes with (llama.cpp's
// spelling), shared by every command that computes.
#pragma once

#include <string>

#include "cli/args.h"

namespace swan::cli {

// The help line, with this machine's default in it.
std::string ThreadsHelp(bool short_flag = true);

// Applies the option when given (swan's thread limit, util/threads.h);
// throws on a value that is not a positive whole number.
void ApplyThreadsOption(const Args& args);

}  // namespace swan::cli
