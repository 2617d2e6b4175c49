#include "serve/guarded_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "serve/openai_api.h"

namespace swan {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point After(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", s);
  return text;
}

// "ip", port of a socket's peer (remote) or own (local) end.
void Address(socket_t sock, bool remote, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ip.clear();
  port = 0;
  const int rc = remote ? getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
                        : getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    port = ntohs(a->sin6_port);
  }
  ip = text;
}

// A socket stream whose reads share one deadline (httplib's restart their
// timeout on every byte) and which gives up when the server stops.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(socket_t sock, double write_timeout_s, const std::atomic<socket_t>& listening)
      : sock_(sock), write_timeout_ms_(int(write_timeout_s * 1000)), listening_(listening) {}

  void SetReadDeadline(Clock::time_point deadline) {
    deadline_ = deadline;
    timed_out_ = false;
  }
  bool timed_out() const { return timed_out_; }
  // Sends past a timed-out read (write() then discards).
  void SendRaw(const std::string& bytes) {
    if (is_writable()) (void)!send(sock_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }

  // Waits until bytes can be read, up to `until`; false when the time ran
  // out, the peer closed the connection, or the server stopped.
  bool WaitReadable(Clock::time_point until) const {
    if (begin_ < end_) return true;
    while (listening_ != INVALID_SOCKET) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{sock_, POLLIN, 0};
      // Slices of 100 ms so that a stopping server is noticed.
      const int rc = poll(&p, 1, int(std::min<long long>(left, 100)));
      if (rc > 0) return true;
      if (rc < 0 && errno != EINTR) return false;
    }
    return false;
  }

  bool is_readable() const override { return WaitReadable(deadline_); }

  // False as soon as the client has closed its end (POLLRDHUP), so that a
  // stream it aborted stops at the next write instead of the second one
  // after the peer's reset.
  bool is_writable() const override {
    pollfd p{sock_, POLLOUT | POLLRDHUP, 0};
    int rc;
    do rc = poll(&p, 1, write_timeout_ms_);
    while (rc < 0 && errno == EINTR);
    return rc > 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (!WaitReadable(deadline_)) {
        timed_out_ = Clock::now() >= deadline_;
        return -1;
      }
      ssize_t n;
      do n = recv(sock_, buffer_, sizeof(buffer_), 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      begin_ = 0;
      end_ = size_t(n);
    }
    const size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_ + begin_, n);
    begin_ += n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    // httplib answers a request cut short with 400; past the deadline the
    // answer is 408, which the connection loop sends instead.
    if (timed_out_) return ssize_t(size);
    if (!is_writable()) return -1;
    ssize_t n;
    do n = send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { Address(sock_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { Address(sock_, false, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  const socket_t sock_;
  const int write_timeout_ms_;
  const std::atomic<socket_t>& listening_;  // INVALID_SOCKET once the server stops
  Clock::time_point deadline_ = Clock::now();
  bool timed_out_ = false;
  char buffer_[4096];  // [end_ - begin_ unread bytes]
  size_t begin_ = 0, end_ = 0;
};

// A whole response with an OpenAI-style error body, for a client the server
// will not read from.
// A refusal for a full cap (429, 503) says when to try again.
std::string ErrorResponse(int status, const char* reason, const std::string& message, const char* code) {
  const std::string body = ErrorBody(status, message, "", code).dump();
  const std::string retry = status == 429 || status == 503 ? "Retry-After: 1\r\n" : "";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: application/json\r\n" + retry +
         "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Sends `response` and closes. What the client already sent is read first
// (up to 64 KiB, 50 ms), so that the close is not a reset that loses the
// response before the client reads it.
void RefuseAndClose(socket_t sock, const std::string& response) {
  char sink[4096];
  for (int i = 0; i < 16; ++i) {
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, i == 0 ? 50 : 0) <= 0) break;
    if (recv(sock, sink, sizeof(sink), MSG_DONTWAIT) <= 0) break;
  }
  pollfd p{sock, POLLOUT, 0};
  if (poll(&p, 1, 1000) > 0) (void)!send(sock, response.data(), response.size(), MSG_NOSIGNAL);
  shutdown(sock, SHUT_RDWR);
  close(sock);
}

}  // namespace

int ConnectionCounter::Live(const std::vector<socket_t>& socks) {
  std::vector<pollfd> polls;
  for (socket_t s : socks) polls.push_back({s, POLLRDHUP, 0});
  if (poll(polls.data(), polls.size(), 0) < 0) return int(socks.size());
  int live = 0;
  for (const pollfd& p : polls) live += (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0;
  return live;
}

ConnectionCounter::Admit ConnectionCounter::Acquire(const std::string& client, socket_t sock) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Counting first, polling only at a cap: the common case makes no system call.
  int total = 0;
  for (const auto& [_, socks] : by_client_) total += int(socks.size());
  if (total >= limits_.max_connections) {
    total = 0;
    for (const auto& [_, socks] : by_client_) total += Live(socks);
    if (total >= limits_.max_connections) return Admit::kServerFull;
  }
  std::vector<socket_t>& mine = by_client_[client];
  if (int(mine.size()) >= limits_.max_per_client && Live(mine) >= limits_.max_per_client) return Admit::kClientFull;
  mine.push_back(sock);
  return Admit::kYes;
}

void ConnectionCounter::Release(const std::string& client, socket_t sock) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_client_.find(client);
  if (it == by_client_.end()) return;
  std::erase(it->second, sock);
  if (it->second.empty()) by_client_.erase(it);
}

int ConnectionCounter::open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int total = 0;
  for (const auto& [_, socks] : by_client_) total += int(socks.size());
  return total;
}

GuardedServer::GuardedServer(const ConnectionLimits& limits) : limits_(limits), counter_(limits) {
  // Spare threads beyond the cap answer refusals while the cap is full.
  const size_t threads = size_t(limits.max_connections) + 8;
  new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
}

void GuardedServer::RaiseBacklog() {
  const socket_t sock = svr_sock_;
  if (sock != INVALID_SOCKET) ::listen(sock, SOMAXCONN);
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  const Clock::time_point accepted = Clock::now();
  std::string client;
  int client_port = 0;
  Address(sock, true, client, client_port);
  switch (counter_.Acquire(client, sock)) {
    case ConnectionCounter::Admit::kYes: break;
    case ConnectionCounter::Admit::kClientFull:
      RefuseAndClose(sock, ErrorResponse(429, "Too Many Requests",
                                         "too many open connections from " + client + " (at most " +
                                             std::to_string(limits_.max_per_client) + ")",
                                         "too_many_connections"));
      return false;
    case ConnectionCounter::Admit::kServerFull:
      RefuseAndClose(sock, ErrorResponse(503, "Service Unavailable",
                                         "the server has " + std::to_string(limits_.max_connections) +
                                             " open connections, its most",
                                         "server_full"));
      return false;
  }

  DeadlineStream stream(sock, limits_.write_timeout_s, svr_sock_);
  bool ok = true;
  Clock::time_point deadline =
      accepted + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.request_timeout_s));
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    if (left != keep_alive_max_count_) {
      if (!stream.WaitReadable(After(limits_.idle_timeout_s))) break;
      deadline = After(limits_.request_timeout_s);
    }
    stream.SetReadDeadline(deadline);
    bool connection_closed = false;
    ok = process_request(stream, left == 1, connection_closed, nullptr);
    if (stream.timed_out()) {
      stream.SendRaw(ErrorResponse(408, "Request Timeout",
                                   "the request did not arrive within " + Seconds(limits_.request_timeout_s) + " s",
                                   "request_timeout"));
      ok = false;
    }
    if (!ok || connection_closed) break;
  }
  // Released before the close: a new connection may get the same number.
  counter_.Release(client, sock);
  shutdown(sock, SHUT_RDWR);
  close(sock);
  return ok;
}

}  // namespace swan
