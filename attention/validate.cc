#include <stdexcept>
#include <string>

#include "attention/attention.h"
#include "attention/kv_rows.h"

namespace swan {

void ValidateAttention(const AttentionArgs& args) {
  const AttentionShape& s = args.shape;
  auto fail = [](const std::string& what) { throw std::invalid_argument("attention: " + what); };
  if (s.n_heads <= 0 || s.n_kv_heads <= 0 || s.head_dim <= 0)
    fail("n_heads, n_kv_heads and head_dim must be positive (got " + std::to_string(s.n_heads) + ", " +
         std::to_string(s.n_kv_heads) + ", " + std::to_string(s.head_dim) + ")");
  if (s.n_heads % s.n_kv_heads != 0)
    fail(std::to_string(s.n_heads) + " query heads cannot be grouped onto " + std::to_string(s.n_kv_heads) +
         " KV heads (not a multiple)");
  if (args.n_q < 0 || args.kv.n_rows < 0) fail("negative query or key count");
  if (args.n_q > 0 && (!args.q || !args.q_pos)) fail("queries or their positions are null");
  if (args.kv.n_rows > 0 && (!args.kv.k || !args.kv.v || !args.kv.pos)) fail("K, V or key positions are null");
  if (args.kv.row_stride != 0 && args.kv.row_stride < int64_t(s.n_kv_heads) * s.head_dim)
    fail("KV row stride " + std::to_string(args.kv.row_stride) + " is shorter than a row (" +
         std::to_string(int64_t(s.n_kv_heads) * s.head_dim) + " elements)");
  if (args.kv.type == KvType::kQ8_0 && (s.head_dim % 32 != 0 || args.kv.row_stride % 32 != 0))
    fail("a q8_0 KV cache needs head_dim (" + std::to_string(s.head_dim) +
         ") and the row stride to be multiples of 32 (its block); use --kv bf16 or f32");
  if (args.kv.type == KvType::kF16) fail("no KV cache stores f16");
  if (!(args.scale >= 0.0f)) fail("scale must be >= 0 (0 = 1/sqrt(head_dim))");
  try {
    ValidateSpan(args.span);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
  }
}

}  // namespace swan
