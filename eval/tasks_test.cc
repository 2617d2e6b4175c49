// The task generators: exact lengths in tokens, needles where the depth
// says, answers present in the prompt, controlled recall distances,
// reproducible from the seed; and teacher-forced scoring agrees with greedy
// decoding.
#include "eval/tasks.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "eval/score.h"
#include "eval/test_data.h"
#include "model/sampler.h"

namespace swan {
namespace {

class Tasks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tokenizer_ = new Tokenizer(Tokenizer::Load(test::Stories260K()));
    encoder_ = new PieceEncoder(*tokenizer_);
    noise_ = new Filler(NoiseFiller(*encoder_));
    story_ = new Filler(TextFiller(*encoder_, test::StoryText()));
  }
  static void TearDownTestSuite() {
    delete story_;
    delete noise_;
    delete encoder_;
    delete tokenizer_;
  }
  static TaskContext Context(const Filler* filler) { return {encoder_, filler, tokenizer_->bos_id()}; }
  static size_t LongestSentence(const Filler& f) {
    size_t n = 0;
    for (const auto& s : f.sentences) n = std::max(n, s.size());
    return n;
  }
  static std::vector<int32_t> Slice(const TaskItem& item, int64_t begin, int64_t n) {
    return {item.tokens.begin() + begin, item.tokens.begin() + begin + n};
  }
  static Tokenizer* tokenizer_;
  static PieceEncoder* encoder_;
  static Filler* noise_;
  static Filler* story_;
};
Tokenizer* Tasks::tokenizer_ = nullptr;
PieceEncoder* Tasks::encoder_ = nullptr;
Filler* Tasks::noise_ = nullptr;
Filler* Tasks::story_ = nullptr;

TEST_F(Tasks, PiecesConcatenateLikeRunningText) {
  const std::vector<int32_t> a = encoder_->Start("The sky is blue.");
  std::vector<int32_t> ab = a;
  const std::vector<int32_t> b = encoder_->Mid("The sun is yellow.");
  ab.insert(ab.end(), b.begin(), b.end());
  EXPECT_EQ(tokenizer_->Decode(ab, true), "The sky is blue. The sun is yellow.");
  EXPECT_GT(story_->sentences.size(), 50u);
  EXPECT_EQ(noise_->sentences.size(), 5u);
}

TEST_F(Tasks, HaystackPlacesInsertionsAtExactTargetsWithoutSnapping) {
  HaystackOptions h;
  h.prefix = {1, 2, 3};
  h.length = 90;
  h.snap_to_sentences = false;
  const std::vector<int32_t> needle{7, 7, 7};
  const Haystack hay = BuildHaystack(h, *noise_, {{40, needle}, {10, needle}, {200, needle}});
  ASSERT_EQ(hay.tokens.size(), 90u);
  EXPECT_EQ(hay.starts[0], 40);
  EXPECT_EQ(hay.starts[1], 10);
  EXPECT_EQ(hay.starts[2], 87);  // clamped: it must end by the length
  for (int64_t s : hay.starts)
    EXPECT_EQ(std::vector<int32_t>(hay.tokens.begin() + s, hay.tokens.begin() + s + 3), needle);
  EXPECT_THROW(BuildHaystack({{1, 2}, 4, 0, true}, *noise_, {{0, needle}}), std::invalid_argument);
}

TEST_F(Tasks, RetrievalItemsHaveExactLengthsNeedlesAtDepthAndAnswersInPrompt) {
  const TaskKind kinds[] = {TaskKind::kPasskey, TaskKind::kNiahSingle, TaskKind::kNiahMultiKey,
                            TaskKind::kNiahMultiValue, TaskKind::kNiahMultiQuery};
  for (const Filler* filler : {noise_, story_}) {
    const TaskContext c = Context(filler);
    const int64_t slack = int64_t(LongestSentence(*filler));
    for (TaskKind kind : kinds) {
      const int64_t min_len = MinRetrievalLength(c, kind);
      for (int64_t length : {min_len, min_len + 40, int64_t(500)}) {
        for (double depth : {0.0, 0.3, 0.5, 1.0}) {
          SCOPED_TRACE(std::string(TaskName(kind)) + " length " + std::to_string(length) + " depth " +
                       std::to_string(depth));
          const TaskItem item = MakeRetrievalItem(c, kind, length, depth, 5);
          EXPECT_EQ(item.prompt_length, length);
          EXPECT_EQ(item.tokens[0], tokenizer_->bos_id());
          const size_t want_answers = kind == TaskKind::kNiahMultiValue || kind == TaskKind::kNiahMultiQuery ? 4 : 1;
          ASSERT_EQ(item.answers.size(), want_answers);
          for (const Answer& a : item.answers) {
            EXPECT_GE(a.begin, item.prompt_length);
            // The needle holds exactly the answer's tokens, inside the prompt.
            EXPECT_LT(a.needle + (a.end - a.begin), item.prompt_length);
            EXPECT_EQ(Slice(item, a.needle, a.end - a.begin), Slice(item, a.begin, a.end - a.begin));
            EXPECT_EQ(a.distance, a.begin - 1 - a.needle);
            const std::string prompt = tokenizer_->Decode(Slice(item, 0, item.prompt_length), true);
            EXPECT_NE(prompt.find(a.text), std::string::npos);
          }
          // The first needle is where the depth says, within half a
          // sentence (and another needle's length, if one came first).
          const std::vector<int32_t> marker =
              encoder_->Mid(kind == TaskKind::kPasskey ? "The pass key is" : "One of the special magic numbers");
          EXPECT_EQ(Slice(item, item.needle_start, int64_t(marker.size())), marker);
          const std::vector<int32_t> what = encoder_->Mid("What");  // the question starts there
          EXPECT_EQ(Slice(item, item.filler_end, int64_t(what.size())), what);
          const double want =
              double(item.filler_begin) + depth * double(item.filler_end - item.filler_begin - item.needle_tokens);
          const double tolerance =
              double(slack) / 2 + 1 +
              (want_answers > 1 || kind == TaskKind::kNiahMultiKey ? double(item.needle_tokens) : 0.0);
          EXPECT_LE(std::abs(double(item.needle_start) - want), tolerance) << "needle at " << item.needle_start;
          if (depth == 0.0) {
            EXPECT_EQ(item.needle_start, item.filler_begin);
          }
          if (depth == 1.0 && want_answers == 1 && kind != TaskKind::kNiahMultiKey) {
            EXPECT_EQ(item.needle_start + item.needle_tokens, item.filler_end);
          }
        }
      }
    }
  }
}

TEST_F(Tasks, ItemsAreReproducibleFromTheSeed) {
  const TaskContext c = Context(noise_);
  const TaskItem a = MakeRetrievalItem(c, TaskKind::kNiahMultiKey, 400, 0.5, 11);
  const TaskItem b = MakeRetrievalItem(c, TaskKind::kNiahMultiKey, 400, 0.5, 11);
  const TaskItem other = MakeRetrievalItem(c, TaskKind::kNiahMultiKey, 400, 0.5, 12);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, other.tokens);
  EXPECT_EQ(MakeRecallItem(c, 50, 3, 4).tokens, MakeRecallItem(c, 50, 3, 4).tokens);
  EXPECT_THROW(MakeRetrievalItem(c, TaskKind::kPasskey, 20, 0.5, 1), std::invalid_argument);
}

TEST_F(Tasks, RecallPutsEachQueryAtTheDistanceAsked) {
  const TaskContext c = Context(noise_);
  const int64_t shortest = MinRecallDistance(c);
  EXPECT_LT(shortest, 24);
  EXPECT_THROW(MakeRecallItem(c, 3, 2, 1), std::invalid_argument);
  for (int64_t distance : {shortest, int64_t(40), int64_t(64), int64_t(100), int64_t(300)}) {
    const TaskItem item = MakeRecallItem(c, distance, 4, 3);
    ASSERT_EQ(item.answers.size(), 4u);
    EXPECT_EQ(item.requested_distance, distance);
    for (const Answer& a : item.answers) {
      EXPECT_EQ(a.distance, distance);
      EXPECT_EQ(Slice(item, a.needle, a.end - a.begin), Slice(item, a.begin, a.end - a.begin));
      // The key before the value is the same at the pair and at the query.
      EXPECT_EQ(Slice(item, a.needle - 4, 4), Slice(item, a.begin - 4, 4));
    }
    EXPECT_LE(int64_t(item.tokens.size()), distance + 300);
  }
}

TEST_F(Tasks, TeacherForcedScoreAgreesWithGreedyDecoding) {
  auto model = LoadModel(test::Stories260K());
  const AttentionPlan plan = model->ResolvePlan("full");
  // A prompt and the 6 tokens greedy decoding continues it with.
  TaskItem item;
  item.tokens = tokenizer_->Encode("Once upon a time, there was a little");
  const int64_t vocab = model->config().vocab_size;
  std::vector<float> logits(static_cast<size_t>(vocab));  // [vocab]
  for (int i = 0; i < 6; ++i) {
    auto session = model->NewSession(plan);
    std::vector<int32_t> pos(item.tokens.size());
    for (size_t p = 0; p < pos.size(); ++p) pos[p] = int32_t(p);
    model->Forward(logits.data(), Batch{item.tokens.data(), pos.data(), int64_t(pos.size()), false}, *session);
    item.tokens.push_back(Argmax(logits.data(), vocab));
  }
  const int64_t n = int64_t(item.tokens.size());
  item.answers.push_back({n - 6, n - 3, 0, 0, ""});
  item.answers.push_back({n - 3, n, 0, 0, ""});
  KvCacheOptions kv;
  kv.max_chunk = 4;
  std::vector<AnswerScore> s = ScoreItem(*model, plan, item, kv);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].correct);
  EXPECT_TRUE(s[1].correct);
  EXPECT_EQ(s[0].tokens, 3);
  EXPECT_GT(s[0].nll, 0.0);
  item.tokens[size_t(n - 2)] = (item.tokens[size_t(n - 2)] + 1) % int32_t(vocab);
  s = ScoreItem(*model, plan, item, kv);
  EXPECT_TRUE(s[0].correct);
  EXPECT_FALSE(s[1].correct);
}

}  // namespace
}  // namespace swan
