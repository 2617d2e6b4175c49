#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace swan {

int32_t Argmax(const float* logits, int64_t vocab) {
  return int32_t(std::max_element(logits, logits + vocab) - logits);
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {
  if (!(options.temperature >= 0))
    throw std::invalid_argument("temperature must be >= 0, got " + std::to_string(options.temperature));
  if (options.top_k < 0) throw std::invalid_argument("top-k must be >= 0");
  if (!(options.top_p > 0 && options.top_p <= 1))
    throw std::invalid_argument("top-p must be in (0, 1], got " + std::to_string(options.top_p));
  if (!(options.min_p >= 0 && options.min_p <= 1))
    throw std::invalid_argument("min-p must be in [0, 1], got " + std::to_string(options.min_p));
}

int32_t Sampler::Sample(const float* logits, int64_t vocab) {
  if (options_.temperature == 0 || options_.top_k == 1) return Argmax(logits, vocab);

  // Candidates sorted by logit, most likely first.
  std::vector<int32_t> ids(static_cast<size_t>(vocab));  // [vocab]
  std::iota(ids.begin(), ids.end(), 0);
  size_t keep = ids.size();
  if (options_.top_k > 0) keep = std::min(keep, size_t(options_.top_k));
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(keep), ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  ids.resize(keep);

  std::vector<double> probs(keep);  // [keep] softmax of logit / temperature
  const double top = logits[ids[0]];
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) sum += probs[i] = std::exp((logits[ids[i]] - top) / options_.temperature);
  for (double& p : probs) p /= sum;

  if (options_.top_p < 1) {
    double cumulative = 0;
    size_t n = 0;
    while (n < keep && cumulative < options_.top_p) cumulative += probs[n++];
    keep = std::max<size_t>(n, 1);
  }
  if (options_.min_p > 0) {
    const double threshold = options_.min_p * probs[0];
    size_t n = 1;
    while (n < keep && probs[n] >= threshold) ++n;
    keep = n;
  }
  std::discrete_distribution<size_t> pick(probs.begin(), probs.begin() + std::ptrdiff_t(keep));
  return ids[pick(rng_)];
}

}  // namespace swan
