// Synthetic long-range retrieval documents, mixed into training so that a
// small model learns to fetch facts from far back in its context (and, with
// a window plan, to route that through its full-attention layers):
//   * passkey: a number stated once among filler lines, asked for at the end;
//   * kv: a table of random key-value pairs, then some keys to complete;
//   * code: a Python file that defines a constant and a helper near the top
//     and uses them after thousands of characters of other code.
// Each document is plain text of about `chars` characters; the retrieval
// question sits at the end, its answer at least `chars / 2` characters
// after the fact it asks for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swan {

enum class SyntheticKind { kPasskey, kKeyValue, kCode };

struct SyntheticDoc {
  SyntheticKind kind;
  std::string text;
  std::string answer;  // what the end of the text must reproduce
};

// One document, deterministic in (seed, index).
SyntheticDoc MakeSyntheticDoc(SyntheticKind kind, int64_t chars, uint64_t seed, uint64_t index);

// Parses "passkey,kv,code" (any subset). Throws std::invalid_argument.
std::vector<SyntheticKind> ParseSyntheticKinds(const std::string& list);
const char* SyntheticKindName(SyntheticKind kind);

}  // namespace swan
