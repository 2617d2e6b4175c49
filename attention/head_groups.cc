#include "attention/head_groups.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "attention/kv_rows.h"

namespace swan {

std::vector<HeadGroup> SplitHeads(const std::vector<int32_t>& full_heads, int32_t n_kv_heads, const Span& window) {
  if (window.full()) throw std::invalid_argument("a per-head layer needs a window for its other heads");
  std::vector<char> is_full(size_t(std::max(n_kv_heads, 0)), 0);  // [n_kv_heads]
  for (const int32_t h : full_heads) {
    if (h < 0 || h >= n_kv_heads)
      throw std::invalid_argument("KV head " + std::to_string(h) + " is out of range (the model has " +
                                  std::to_string(n_kv_heads) + " KV heads)");
    if (is_full[size_t(h)]) throw std::invalid_argument("KV head " + std::to_string(h) + " is listed twice");
    is_full[size_t(h)] = 1;
  }
  HeadGroup full, rest;
  rest.span = window;
  for (int32_t h = 0; h < n_kv_heads; ++h) (is_full[size_t(h)] ? full : rest).kv_heads.push_back(h);
  std::vector<HeadGroup> groups;
  for (HeadGroup* g : {&full, &rest})
    if (!g->kv_heads.empty()) groups.push_back(std::move(*g));
  return groups;
}

std::vector<int32_t> QueryHeadsOf(const std::vector<int32_t>& kv_heads, int32_t group) {
  std::vector<int32_t> q;  // [kv_heads.size() * group]
  for (const int32_t h : kv_heads)
    for (int32_t i = 0; i < group; ++i) q.push_back(h * group + i);
  return q;
}

void GatherHeads(float* dst, const float* src, int64_t n, int32_t n_heads, int64_t width,
                 const std::vector<int32_t>& heads) {
  const int64_t m = int64_t(heads.size());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < m; ++i)
      std::copy_n(src + (t * n_heads + heads[size_t(i)]) * width, width, dst + (t * m + i) * width);
}

void ScatterHeads(float* dst, const float* src, int64_t n, int32_t n_heads, int64_t width,
                  const std::vector<int32_t>& heads) {
  const int64_t m = int64_t(heads.size());
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < m; ++i)
      std::copy_n(src + (t * m + i) * width, width, dst + (t * n_heads + heads[size_t(i)]) * width);
}

namespace {

void RequireCover(const std::vector<HeadGroup>& groups, int32_t n_kv_heads) {
  std::vector<int32_t> seen;
  for (const HeadGroup& g : groups) seen.insert(seen.end(), g.kv_heads.begin(), g.kv_heads.end());
  std::sort(seen.begin(), seen.end());
  bool ok = int32_t(seen.size()) == n_kv_heads;
  for (size_t i = 0; ok && i < seen.size(); ++i) ok = seen[i] == int32_t(i);
  if (!ok) throw std::invalid_argument("head groups must cover every KV head once");
}

// One group's problem: its query heads (gathered), its view and span.
struct GroupCall {
  std::vector<int32_t> q_heads;  // [m * group]
  std::vector<float> q;          // [n_q, m * group, head_dim]
  std::vector<float> sinks;      // [m * group] or empty
  AttentionArgs args;
};

GroupCall MakeGroupCall(const AttentionArgs& args, const HeadGroup& g) {
  const AttentionShape& s = args.shape;
  const int32_t group = s.n_heads / s.n_kv_heads;
  GroupCall c;
  c.q_heads = QueryHeadsOf(g.kv_heads, group);
  const int32_t m = int32_t(c.q_heads.size());
  c.q.resize(size_t(args.n_q * m * s.head_dim));
  GatherHeads(c.q.data(), args.q, args.n_q, s.n_heads, s.head_dim, c.q_heads);
  if (args.sink_logits) {
    c.sinks.resize(size_t(m));
    GatherHeads(c.sinks.data(), args.sink_logits, 1, s.n_heads, 1, c.q_heads);
  }
  c.args = args;
  c.args.shape = AttentionShape{m, int32_t(g.kv_heads.size()), s.head_dim};
  c.args.q = c.q.data();
  c.args.kv = g.kv;
  c.args.span = g.span;
  c.args.sink_logits = args.sink_logits ? c.sinks.data() : nullptr;
  return c;
}

// One group through `kernel` (Attend or AttendReference), its results
// scattered into every head's out [n_q, n_heads, head_dim] and lse.
void AttendGroup(const AttentionArgs& args, const HeadGroup& g,
                 void (*kernel)(const AttentionArgs&, float*, float*, float*), float* out, float* lse) {
  const AttentionShape& s = args.shape;
  const GroupCall c = MakeGroupCall(args, g);
  const int64_t m = int64_t(c.q_heads.size());
  std::vector<float> o(size_t(args.n_q * m * s.head_dim));  // [n_q, m, head_dim]
  std::vector<float> l(size_t(args.n_q * m));               // [n_q, m]
  kernel(c.args, o.data(), l.data(), nullptr);
  ScatterHeads(out, o.data(), args.n_q, s.n_heads, s.head_dim, c.q_heads);
  if (lse) ScatterHeads(lse, l.data(), args.n_q, s.n_heads, 1, c.q_heads);
}

// Groups of equal span over a float32 view of every KV head, each with its
// keys and values gathered.   storage: [n_groups][2] K and V of the group
std::vector<HeadGroup> GroupsOfView(const AttentionArgs& args, const std::vector<Span>& head_spans,
                                    std::vector<std::vector<float>>& storage) {
  const AttentionShape& s = args.shape;
  if (int32_t(head_spans.size()) != s.n_kv_heads)
    throw std::invalid_argument("per-head attention: " + std::to_string(head_spans.size()) + " spans for " +
                                std::to_string(s.n_kv_heads) + " KV heads");
  if (args.kv.type != KvType::kF32 || (args.kv.row_stride && args.kv.row_stride != int64_t(s.n_kv_heads) * s.head_dim))
    throw std::invalid_argument("per-head attention over one view needs dense float32 keys and values");
  std::vector<HeadGroup> groups;
  for (int32_t h = 0; h < s.n_kv_heads; ++h) {
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const HeadGroup& g) { return g.span == head_spans[size_t(h)]; });
    if (it == groups.end()) {
      groups.emplace_back();
      groups.back().span = head_spans[size_t(h)];
      it = groups.end() - 1;
    }
    it->kv_heads.push_back(h);
  }
  storage.assign(2 * groups.size(), {});
  const int64_t n_rows = args.kv.n_rows;
  for (size_t g = 0; g < groups.size(); ++g) {
    HeadGroup& group = groups[g];
    const int64_t m = int64_t(group.kv_heads.size());
    for (int side = 0; side < 2; ++side) {
      std::vector<float>& buf = storage[2 * g + size_t(side)];  // [n_rows, m, head_dim]
      buf.resize(size_t(n_rows * m * s.head_dim));
      GatherHeads(buf.data(), static_cast<const float*>(side == 0 ? args.kv.k : args.kv.v), n_rows, s.n_kv_heads,
                  s.head_dim, group.kv_heads);
    }
    group.kv = args.kv;
    group.kv.k = storage[2 * g].data();
    group.kv.v = storage[2 * g + 1].data();
    group.kv.row_stride = 0;
  }
  return groups;
}

}  // namespace

void AttendHeadGroups(const AttentionArgs& args, const std::vector<HeadGroup>& groups, float* out, float* lse) {
  const AttentionShape& s = args.shape;
  if (s.n_kv_heads <= 0 || s.n_heads % s.n_kv_heads != 0)
    throw std::invalid_argument("per-head attention: n_heads must be a multiple of n_kv_heads");
  RequireCover(groups, s.n_kv_heads);
  if (groups.size() == 1) {  // one span for every head: the plain kernel
    AttentionArgs a = args;
    a.kv = groups[0].kv;
    a.span = groups[0].span;
    Attend(a, out, lse);
    return;
  }
  for (const HeadGroup& g : groups) AttendGroup(args, g, Attend, out, lse);
}

void AttendPerHead(const AttentionArgs& args, const std::vector<Span>& head_spans, float* out, float* lse) {
  std::vector<std::vector<float>> storage;
  AttendHeadGroups(args, GroupsOfView(args, head_spans, storage), out, lse);
}

void AttendBackwardPerHead(const AttentionArgs& args, const std::vector<Span>& head_spans, const AttentionSaved& saved,
                           const AttentionGrads& grads) {
  if (grads.accumulate) throw std::invalid_argument("per-head attention backward does not accumulate");
  const AttentionShape& s = args.shape;
  std::vector<std::vector<float>> storage;
  const std::vector<HeadGroup> groups = GroupsOfView(args, head_spans, storage);
  const int64_t n_q = args.n_q, n_rows = args.kv.n_rows, d = s.head_dim;
  for (const HeadGroup& g : groups) {
    const GroupCall c = MakeGroupCall(args, g);
    const int64_t m = int64_t(c.q_heads.size()), mk = int64_t(g.kv_heads.size());
    std::vector<float> out(size_t(n_q * m * d)), d_out(out.size()), dq(out.size());  // [n_q, m, d]
    std::vector<float> lse(size_t(n_q * m));                                         // [n_q, m]
    std::vector<float> dk(size_t(n_rows * mk * d)), dv(dk.size());                   // [n_rows, mk, d]
    std::vector<float> d_sinks(size_t(m), 0.0f);                                     // [m]
    GatherHeads(out.data(), saved.out, n_q, s.n_heads, d, c.q_heads);
    GatherHeads(d_out.data(), saved.d_out, n_q, s.n_heads, d, c.q_heads);
    GatherHeads(lse.data(), saved.lse, n_q, s.n_heads, 1, c.q_heads);
    AttentionSaved group_saved{out.data(), lse.data(), d_out.data()};
    AttentionGrads group_grads{dq.data(), dk.data(), dv.data(), grads.d_sink_logits ? d_sinks.data() : nullptr, false};
    AttendBackward(c.args, group_saved, group_grads);
    ScatterHeads(grads.dq, dq.data(), n_q, s.n_heads, d, c.q_heads);
    ScatterHeads(grads.dk, dk.data(), n_rows, s.n_kv_heads, d, g.kv_heads);
    ScatterHeads(grads.dv, dv.data(), n_rows, s.n_kv_heads, d, g.kv_heads);
    if (grads.d_sink_logits)
      for (int64_t i = 0; i < m; ++i) grads.d_sink_logits[c.q_heads[size_t(i)]] += d_sinks[size_t(i)];
  }
}

void AttendPerHeadReference(const AttentionArgs& args, const std::vector<Span>& head_spans, float* out, float* lse) {
  const AttentionShape& s = args.shape;
  if (int32_t(head_spans.size()) != s.n_kv_heads)
    throw std::invalid_argument("per-head attention: one span per KV head");
  // One call per KV head, over a view of that head alone (a row stride).
  for (int32_t h = 0; h < s.n_kv_heads; ++h) {
    HeadGroup g;
    g.kv_heads = {h};
    g.span = head_spans[size_t(h)];
    g.kv = args.kv;
    g.kv.row_stride = KvRowStride(args.kv, s);
    const int64_t offset = KvBytes(args.kv.type, int64_t(h) * s.head_dim);
    g.kv.k = static_cast<const uint8_t*>(args.kv.k) + offset;
    g.kv.v = static_cast<const uint8_t*>(args.kv.v) + offset;
    AttendGroup(args, g, AttendReference, out, lse);
  }
}

}  // namespace swan
