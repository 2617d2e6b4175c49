// swan.load, the model's properties, logits, caches and scores.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/score.h"
#include "kv/kv_snapshot.h"
#include "model/gguf_tokenizer.h"
#include "python/bind.h"
#include "python/interrupt.h"
#include "util/threads.h"

namespace py = pybind11;

namespace swan::python {

const Tokenizer& Model::tokenizer() {
  if (!tokenizer_) tokenizer_.emplace(LoadModelTokenizer(path));
  return *tokenizer_;
}

void Model::UseThreads() const {
  if (threads > 0) SetThreadLimit(threads);
}

void CheckTokenIds(const std::vector<int32_t>& ids, int64_t vocab) {
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("token id " + std::to_string(id) + " is not below the vocabulary size " +
                                  std::to_string(vocab));
}

void ForwardInto(Cache& cache, const std::vector<int32_t>& ids, float* logits, bool all_logits) {
  const Model& m = *cache.owner;
  const int64_t vocab = m.model->config().vocab_size, n = int64_t(ids.size());
  if (n == 0) throw std::invalid_argument("no token ids given");
  CheckTokenIds(ids, vocab);
  if (cache.n_pos + n > cache.context)
    throw std::invalid_argument("the cache holds " + std::to_string(cache.n_pos) + " positions of its context of " +
                                std::to_string(cache.context) + "; " + std::to_string(n) +
                                " more do not fit (model.new_cache(context=...))");
  py::gil_scoped_release released;
  m.UseThreads();
  std::vector<int32_t> pos(static_cast<size_t>(n));  // [n]
  for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = int32_t(cache.n_pos + i);
  const int64_t chunk = m.kv.max_chunk;
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t count = std::min(chunk, n - begin);
    float* out = all_logits ? logits + begin * vocab : logits;
    m.model->Forward(out, Batch{ids.data() + begin, pos.data() + begin, count, all_logits}, *cache.session);
    cache.n_pos += count;
    if (begin + count < n) CheckInterrupt();
  }
}

namespace {

std::shared_ptr<Model> Load(const std::string& path, const std::string& plan, const std::optional<std::string>& weights,
                            const std::string& kv, std::optional<int> threads, int batch) {
  if (!std::filesystem::exists(path)) {
    errno = ENOENT;
    PyErr_SetFromErrnoWithFilename(PyExc_FileNotFoundError, path.c_str());
    throw py::error_already_set();
  }
  if (threads && *threads < 1)
    throw std::invalid_argument("threads must be at least 1, got " + std::to_string(*threads));
  if (batch < 1) throw std::invalid_argument("batch must be at least 1, got " + std::to_string(batch));
  auto m = std::make_shared<Model>();
  m->path = path;
  m->threads = threads.value_or(0);
  m->kv.type = KvTypeFromString(kv);
  m->kv.max_chunk = batch;
  LoadOptions options;
  if (weights) options.weights = ParseWeightType(*weights, "weights");
  {
    py::gil_scoped_release released;
    m->model = LoadModel(path, options);
  }
  m->plan = m->model->ResolvePlan(plan);
  return m;
}

// The plan, one dict per layer.
py::list PlanLayers(const AttentionPlan& plan) {
  py::list layers;
  for (size_t i = 0; i < plan.layers.size(); ++i) {
    const LayerPlan& l = plan.layers[i];
    py::dict d;
    d["layer"] = i;
    d["kind"] = LayerKindName(l.kind);
    d["window"] = l.span.window;
    d["sinks"] = l.span.sinks;
    d["rope"] = l.rope.ToString();
    d["rope_base"] = l.rope.enabled ? py::object(py::float_(l.rope.base)) : py::object(py::none());
    d["positions"] = l.position_mode == PositionMode::kCache ? "cache" : "absolute";
    if (l.kind == LayerKind::kPerHead) d["full_heads"] = l.full_heads;
    layers.append(d);
  }
  return layers;
}

std::shared_ptr<Cache> NewCache(const std::shared_ptr<Model>& m, std::optional<int64_t> context) {
  const int64_t trained = m->model->config().max_position_embeddings;
  auto cache = std::make_shared<Cache>();
  cache->owner = m;
  cache->context = context.value_or(trained > 0 ? trained : int64_t(1) << 20);
  if (cache->context < 1)
    throw std::invalid_argument("context must be at least 1, got " + std::to_string(cache->context));
  KvCacheOptions kv = m->kv;
  kv.max_context = cache->context;
  cache->session = m->model->NewSession(m->plan, kv);
  return cache;
}

py::array_t<float> Forward(const std::shared_ptr<Model>& m, const std::vector<int32_t>& ids, Cache& cache,
                           bool all_logits) {
  if (cache.owner != m) throw std::invalid_argument("the cache belongs to another model (model.new_cache())");
  const int64_t vocab = m->model->config().vocab_size;
  py::array_t<float> logits({all_logits ? py::ssize_t(ids.size()) : py::ssize_t(1), py::ssize_t(vocab)});
  ForwardInto(cache, ids, logits.mutable_data(), all_logits);
  return logits;
}

py::array_t<float> Logits(const std::shared_ptr<Model>& m, const std::vector<int32_t>& ids) {
  const std::shared_ptr<Cache> cache = NewCache(m, std::max<int64_t>(1, int64_t(ids.size())));
  return Forward(m, ids, *cache, true);
}

// Per scored position: the given token's log-probability and the greedy
// choice, as `swan score` prints them (eval/score.h).
py::list Score(const std::shared_ptr<Model>& m, const std::vector<int32_t>& ids,
               std::optional<std::vector<int64_t>> positions) {
  CheckTokenIds(ids, m->model->config().vocab_size);
  const TaskItem item = ItemScoringPositions(ids, positions.value_or(std::vector<int64_t>()));
  std::vector<AnswerScore> scores;
  {
    py::gil_scoped_release released;
    m->UseThreads();
    scores = ScoreItem(*m->model, m->plan, item, m->kv);
  }
  py::list out;
  for (size_t i = 0; i < scores.size(); ++i) {
    const int64_t p = item.answers[i].begin;
    const int32_t token = ids[size_t(p)], greedy = scores[i].predicted[0];
    py::dict d;
    d["position"] = p;
    d["token"] = token;
    d["logprob"] = -scores[i].token_nll[0];
    d["greedy"] = greedy;
    d["correct"] = greedy == token;
    out.append(d);
  }
  return out;
}

// A snapshot as plain data for pickle: (n_pos, [[(taken, pos, k, v) per
// store] per layer]), the arrays as bytes.
py::tuple SnapshotState(const KvSnapshot& s) {
  py::list layers;
  for (const LayerKvSnapshot& layer : s.layers) {
    py::list stores;
    for (const KvStoreSnapshot& st : layer.stores)
      stores.append(py::make_tuple(
          st.taken, py::bytes(reinterpret_cast<const char*>(st.pos.data()), st.pos.size() * sizeof(int32_t)),
          py::bytes(reinterpret_cast<const char*>(st.k.data()), st.k.size() * sizeof(float)),
          py::bytes(reinterpret_cast<const char*>(st.v.data()), st.v.size() * sizeof(float))));
    layers.append(stores);
  }
  return py::make_tuple(s.n_pos, layers);
}

template <typename T>
std::vector<T> FromBytes(const py::handle& b) {
  const std::string raw = b.cast<std::string>();
  if (raw.size() % sizeof(T) != 0) throw std::invalid_argument("not a swan cache snapshot (a ragged array)");
  std::vector<T> out(raw.size() / sizeof(T));
  std::copy(raw.begin(), raw.end(), reinterpret_cast<char*>(out.data()));
  return out;
}

KvSnapshot SnapshotFromState(const py::tuple& state) {
  if (state.size() != 2) throw std::invalid_argument("not a swan cache snapshot");
  KvSnapshot s;
  s.n_pos = state[0].cast<int64_t>();
  for (const py::handle& layer : state[1].cast<py::list>()) {
    LayerKvSnapshot l;
    for (const py::handle& store : layer.cast<py::list>()) {
      const py::tuple t = store.cast<py::tuple>();
      if (t.size() != 4) throw std::invalid_argument("not a swan cache snapshot");
      KvStoreSnapshot st;
      st.taken = t[0].cast<bool>();
      st.pos = FromBytes<int32_t>(t[1]);
      st.k = FromBytes<float>(t[2]);
      st.v = FromBytes<float>(t[3]);
      l.stores.push_back(std::move(st));
    }
    s.layers.push_back(std::move(l));
  }
  return s;
}

KvSnapshot TakeCacheSnapshot(const Cache& cache) {
  const Model& m = *cache.owner;
  if (m.plan.HasLinearLayers())
    throw std::invalid_argument("a snapshot does not hold linear layers' state; plan " + m.plan.spec +
                                " has linear layers");
  return TakeSnapshot(cache.session->cache, m.model->kv_shape(), cache.n_pos);
}

void RestoreCache(Cache& cache, const KvSnapshot& s) {
  const Model& m = *cache.owner;
  if (s.layers.size() != m.plan.layers.size())
    throw std::invalid_argument("the snapshot has " + std::to_string(s.layers.size()) + " layers, the model " +
                                std::to_string(m.plan.layers.size()));
  if (s.n_pos > cache.context)
    throw std::invalid_argument("the snapshot holds " + std::to_string(s.n_pos) +
                                " positions, more than the cache's context of " + std::to_string(cache.context));
  RestoreSnapshot(s, m.model->kv_shape(), cache.session->cache);
  cache.n_pos = s.n_pos;
}

}  // namespace

void BindModel(py::module_& m) {
  py::class_<KvSnapshot>(m, "Snapshot", "A cache's state at n_pos positions (cache.snapshot()); picklable.")
      .def_readonly("n_pos", &KvSnapshot::n_pos)
      .def_property_readonly("nbytes", &KvSnapshot::Bytes)
      .def(py::pickle([](const KvSnapshot& s) { return SnapshotState(s); },
                      [](const py::tuple& t) { return SnapshotFromState(t); }));

  py::class_<Cache, std::shared_ptr<Cache>>(m, "Cache", "One sequence's KV cache under the model's plan.")
      .def_readonly("n_pos", &Cache::n_pos, "positions [0, n_pos) are in the cache")
      .def_readonly("context", &Cache::context, "the most positions it may hold")
      .def_property_readonly(
          "nbytes", [](const Cache& c) { return c.session->cache.Bytes(); }, "bytes its keys and values take")
      .def("snapshot", &TakeCacheSnapshot, "the cache's state now, to restore later")
      .def("restore", &RestoreCache, py::arg("snapshot"), "returns the cache to a snapshot's state");

  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def_readonly("path", &Model::path)
      .def_property_readonly("config_json", [](const Model& self) { return ModelConfigJson(self.model->config()); })
      .def_property_readonly("plan_layers", [](const Model& self) { return PlanLayers(self.plan); })
      .def_property_readonly("plan_description", [](const Model& self) { return self.plan.Describe(); })
      .def_property_readonly("vocab_size", [](const Model& self) { return self.model->config().vocab_size; })
      .def_property_readonly("kv", [](const Model& self) { return std::string(KvTypeName(self.kv.type)); })
      .def_property_readonly("eos_ids", [](const Model& self) { return self.model->config().eos_token_ids; })
      .def("tokenizer_object", &Model::tokenizer, py::return_value_policy::reference_internal)
      .def("new_cache", &NewCache, py::arg("context") = py::none())
      .def("forward", &Forward, py::arg("ids"), py::arg("cache"), py::arg("all_logits") = true)
      .def("logits", &Logits, py::arg("ids"))
      .def("score", &Score, py::arg("ids"), py::arg("positions") = py::none());

  m.def("load", &Load, py::arg("path"), py::arg("plan") = "", py::arg("weights") = py::none(), py::arg("kv") = "f32",
        py::arg("threads") = py::none(), py::arg("batch") = 512);
}

}  // namespace swan::python
