// The HTTP server against slow and greedy clients over loopback (bounded:
// a few dozen sockets for a few seconds): clients that trickle headers or
// stop halfway get 408 at the request deadline, connections over a client's
// cap get 429 and over the total cap 503 at once, and meanwhile a normal
// client from another address gets every answer within 1 s.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "model/test_files.h"
#include "serve/test_server.h"

namespace swan {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A TCP connection to 127.0.0.1:port from `source` (another loopback address
// is another client to the server). -1 when it cannot connect.
int ConnectFrom(const char* source, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(uint16_t(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One misbehaving connection and what the server answered it.
struct SlowClient {
  int fd = -1;
  bool trickles = false;  // one header line per round, never the blank line
  std::string received;
  double answered_after_s = -1;  // since the connection, when the first bytes came
  Clock::time_point opened;

  int Status() const { return received.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(received.c_str() + 9) : 0; }
};

// A connection that sends `start` first.
SlowClient Open(const char* source, int port, const std::string& start) {
  SlowClient c;
  c.opened = Clock::now();
  c.fd = ConnectFrom(source, port);
  if (c.fd >= 0 && !start.empty()) (void)!send(c.fd, start.data(), start.size(), MSG_NOSIGNAL);
  return c;
}

SlowClient Open(const char* source, int port, bool trickles) {
  SlowClient c = Open(source, port,
                      std::string(trickles ? "GET /health HTTP/1.1\r\n" : "POST /v1/completions HTTP/1.1\r\nHost: x"));
  c.trickles = trickles;
  return c;
}

// One round: read what the server sent; a trickling client that has had no
// answer sends its next header line.
void Round(std::vector<SlowClient>& clients) {
  for (SlowClient& c : clients) {
    if (c.fd < 0) continue;
    char buffer[4096];
    pollfd p{c.fd, POLLIN, 0};
    while (poll(&p, 1, 0) > 0) {
      const ssize_t n = recv(c.fd, buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) break;
      if (c.received.empty()) c.answered_after_s = SecondsSince(c.opened);
      c.received.append(buffer, size_t(n));
    }
    if (c.trickles && c.received.empty()) (void)!send(c.fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
  }
}

void CloseAll(std::vector<SlowClient>& clients) {
  for (SlowClient& c : clients)
    if (c.fd >= 0) close(c.fd);
}

class SlowClients : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LoadModel(test::Stories260K()).release();
    tokenizer_ = new Tokenizer(Tokenizer::Load(test::Stories260K()));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_;
  }
  static LanguageModel* model_;
  static Tokenizer* tokenizer_;
};
LanguageModel* SlowClients::model_ = nullptr;
Tokenizer* SlowClients::tokenizer_ = nullptr;

TEST_F(SlowClients, DoNotStopANormalClient) {
  ConnectionLimits limits;
  limits.max_connections = 16;
  limits.max_per_client = 6;
  limits.request_timeout_s = 1.5;
  limits.idle_timeout_s = 1;
  test::TestServer server(*model_, *tokenizer_, EngineOptions{}, limits);

  // 10 trickling clients from one address, 10 half-header ones from another:
  // 6 of each are admitted, 4 of each refused.
  std::vector<SlowClient> slow;
  for (int i = 0; i < 10; ++i) slow.push_back(Open("127.0.0.2", server.port(), true));
  for (int i = 0; i < 10; ++i) slow.push_back(Open("127.0.0.3", server.port(), false));
  for (const SlowClient& c : slow) ASSERT_GE(c.fd, 0) << "cannot connect from another loopback address";

  httplib::Client normal("127.0.0.1", server.port());
  normal.set_read_timeout(5, 0);
  const Clock::time_point start = Clock::now();
  int answered = 0;
  while (SecondsSince(start) < 3.5) {
    Round(slow);
    const Clock::time_point asked = Clock::now();
    auto res = normal.Get("/health");
    const double took = SecondsSince(asked);
    ASSERT_TRUE(res) << "the normal client got no answer at " << SecondsSince(start) << " s";
    EXPECT_EQ(res->status, 200);
    EXPECT_LT(took, 1.0) << "at " << SecondsSince(start) << " s";
    ++answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  Round(slow);
  EXPECT_GE(answered, 8);

  int refused = 0, timed_out = 0;
  for (const SlowClient& c : slow) {
    if (c.Status() == 429) {
      ++refused;
      EXPECT_LT(c.answered_after_s, 0.5) << c.received;
      EXPECT_NE(c.received.find("too_many_connections"), std::string::npos) << c.received;
      EXPECT_NE(c.received.find("\"type\":\"rate_limit_error\""), std::string::npos) << c.received;
      EXPECT_NE(c.received.find("Retry-After: 1\r\n"), std::string::npos) << c.received;
    } else {
      EXPECT_EQ(c.Status(), 408) << "answer: '" << c.received << "'";
      if (c.Status() == 408) ++timed_out;
      EXPECT_GT(c.answered_after_s, 1.3);
      EXPECT_LT(c.answered_after_s, 2.5);
    }
  }
  EXPECT_EQ(refused, 8);
  EXPECT_EQ(timed_out, 12);
  CloseAll(slow);
}

TEST_F(SlowClients, TheTotalCapAnswers503AtOnceAndFreesWithTheDeadline) {
  ConnectionLimits limits;
  limits.max_connections = 4;
  limits.max_per_client = 3;
  limits.request_timeout_s = 1;
  test::TestServer server(*model_, *tokenizer_, EngineOptions{}, limits);

  std::vector<SlowClient> silent;
  for (const char* source : {"127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3"})
    silent.push_back(Open(source, server.port(), false));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // all four admitted
  std::vector<SlowClient> extra{Open("127.0.0.4", server.port(), false)};
  for (int i = 0; i < 20 && extra[0].received.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    Round(extra);
  }
  EXPECT_EQ(extra[0].Status(), 503) << extra[0].received;
  EXPECT_LT(extra[0].answered_after_s, 0.5);
  EXPECT_NE(extra[0].received.find("server_full"), std::string::npos) << extra[0].received;

  // Past the deadline the four are closed, and the server takes requests.
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  Round(silent);
  for (const SlowClient& c : silent) EXPECT_EQ(c.Status(), 408) << c.received;
  httplib::Client normal("127.0.0.1", server.port());
  auto res = normal.Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  CloseAll(silent);
  CloseAll(extra);
}

// A Content-Length that is not a number is answered at once, not at the
// request deadline.
TEST_F(SlowClients, ABadContentLengthIsAnswered400AtOnce) {
  test::TestServer server(*model_, *tokenizer_, EngineOptions{});
  for (const std::string length : {"-5", "12abc", "99999999999999999999999"}) {
    std::vector<SlowClient> c{
        Open("127.0.0.2", server.port(),
             "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + "\r\n\r\n{\"prompt\": \"hi\"}")};
    while (c[0].received.find("}") == std::string::npos && SecondsSince(c[0].opened) < 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      Round(c);
    }
    EXPECT_EQ(c[0].Status(), 400) << length << ": " << c[0].received;
    EXPECT_LT(c[0].answered_after_s, 0.5) << length;
    EXPECT_NE(c[0].received.find("invalid_content_length"), std::string::npos) << c[0].received;
    CloseAll(c);
  }
}

// A user pressing "stop" again and again: each stream is closed by the
// client while it waits behind a long request (the engine runs one
// sequence), and the next opens at once. The server writes to a waiting
// stream only twice a second, so it has not yet noticed the closed ones;
// they must not count against the client's cap of 2 all the same.
TEST_F(SlowClients, AbortedStreamsDoNotCountAgainstTheCap) {
  ConnectionLimits limits;
  limits.max_per_client = 2;
  EngineOptions engine_options;
  engine_options.max_running = 1;
  test::TestServer server(*model_, *tokenizer_, engine_options, limits);
  auto request = [](int max_tokens) {
    const std::string body = "{\"prompt\": \"Once upon a time\", \"max_tokens\": " + std::to_string(max_tokens) +
                             ", \"stream\": true, \"ignore_eos\": true}";
    return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  // The long request, from another address, holds the engine's one slot.
  std::vector<SlowClient> holder{Open("127.0.0.3", server.port(), request(400))};
  ASSERT_GE(holder[0].fd, 0) << "cannot connect from another loopback address";

  int refused = 0;
  const std::string aborted = request(64);
  for (int i = 0; i < 12; ++i) {
    std::vector<SlowClient> c{Open("127.0.0.2", server.port(), aborted)};
    while (c[0].received.find("\r\n\r\n") == std::string::npos && SecondsSince(c[0].opened) < 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      Round(c);
    }
    if (c[0].Status() == 429) ++refused;
    EXPECT_EQ(c[0].Status(), 200) << "request " << i << ": " << c[0].received;
    close(c[0].fd);  // "stop"
  }
  EXPECT_EQ(refused, 0);
  CloseAll(holder);
  // And the server frees them: every connection closes and the engine
  // runs nothing within a second.
  const Clock::time_point closed = Clock::now();
  while ((server.engine().Stats().running + server.engine().Stats().waiting > 0) && SecondsSince(closed) < 3)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LT(SecondsSince(closed), 1.0);
}

}  // namespace
}  // namespace swan
