// Shared inputs of the eval tests: stories260K and the story text fixture.
#pragma once

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/test_paths.h"

namespace swan::test {

// eval/testdata/stories.txt: six short children's stories (about 3 KB).
// SWAN_EVAL_TESTDATA is the folder, set by eval/CMakeLists.txt.
inline std::string StoryText() {
  const std::string path = std::string(SWAN_EVAL_TESTDATA) + "/stories.txt";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<int32_t> EncodePlain(const Tokenizer& tokenizer, const std::string& text) {
  EncodeOptions o;
  o.add_special_tokens = false;
  o.parse_special = false;
  return tokenizer.Encode(text, o);
}

}  // namespace swan::test
