#include "eval/passkey_source.h"

#include <algorithm>
#include <stdexcept>

#include "model/config.h"
#include "model/gguf_tokenizer.h"

namespace swan {

PasskeySource::PasskeySource(const std::string& model_dir) : tokenizer_(LoadModelTokenizer(model_dir)) {
  const ModelConfig config = LoadModelConfig(model_dir);
  encoder_ = std::make_unique<PieceEncoder>(tokenizer_);
  filler_ = NoiseFiller(*encoder_);
  bos_ = tokenizer_.bos_id() >= 0 ? tokenizer_.bos_id() : config.bos_token_id;
  if (config.max_position_embeddings > 0) default_length_ = std::min<int64_t>(1024, config.max_position_embeddings);
}

TaskItem PasskeySource::Make(int64_t length, double depth, uint64_t seed) const {
  if (length < 64) throw std::invalid_argument("a passkey item needs at least 64 tokens (-c)");
  const TaskContext task{encoder_.get(), &filler_, bos_};
  return MakeRetrievalItem(task, TaskKind::kPasskey, length, depth, seed);
}

}  // namespace swan
