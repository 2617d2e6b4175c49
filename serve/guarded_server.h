// An httplib::Server that holds against slow and greedy clients.
//
// httplib (0.11) serves each connection on a pool thread and restarts its
// read timeout on every byte, so a client that sends one header line every
// few seconds holds a thread for as long as it likes, and a few dozen such
// clients hold them all. GuardedServer replaces the per-connection loop:
//   - a request's headers and body must arrive within a deadline counted from
//     the connection's accept (first request) or from its first byte (later
//     requests on a kept-alive connection); past it the client gets 408;
//   - a kept-alive connection waits at most the idle timeout for its next
//     request;
//   - open connections are capped per client address and in total; one over
//     a cap is answered at once (429 per client, 503 in total) and closed;
//   - a write that the client does not take within the write timeout ends
//     the connection.
// The pool has a few more threads than the total cap, so refusals are never
// queued behind the connections they refuse.
//
// Include only from files compiled with HTTPLIB_CFLAGS (serve/CMakeLists.txt).
#pragma once

#include <httplib.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "serve/connection_limits.h"

namespace swan {

// Open connections by client address, under the two caps. A connection
// whose client has closed it no longer counts, even before the thread
// serving it has noticed: a client that aborts a stream and opens a new
// connection at once (a user pressing "stop") is never refused for the
// one it left.
class ConnectionCounter {
 public:
  enum class Admit { kYes, kClientFull, kServerFull };
  explicit ConnectionCounter(const ConnectionLimits& limits) : limits_(limits) {}
  Admit Acquire(const std::string& client, socket_t sock);
  void Release(const std::string& client, socket_t sock);
  int open() const;

 private:
  // Of `socks`, those whose peer has not closed its end.
  static int Live(const std::vector<socket_t>& socks);

  const ConnectionLimits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::vector<socket_t>> by_client_;
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const ConnectionLimits& limits);
  int open_connections() const { return counter_.open(); }
  // After bind: httplib listens with a backlog of 5, so a burst of clients
  // waits a 1 s SYN retransmission; the kernel's largest backlog instead.
  void RaiseBacklog();

 private:
  // Overrides httplib's private virtual: the keep-alive loop with deadlines.
  bool process_and_close_socket(socket_t sock) override;

  const ConnectionLimits limits_;
  ConnectionCounter counter_;
};

}  // namespace swan
