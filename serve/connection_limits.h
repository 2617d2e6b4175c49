// What `swan serve` allows each HTTP connection (enforced by GuardedServer,
// serve/guarded_server.h).
#pragma once

namespace swan {

struct ConnectionLimits {
  int max_connections = 256;      // open connections, all clients together
  int max_per_client = 32;        // open connections from one IP address
  double request_timeout_s = 10;  // to read one request (headers and body)
  double idle_timeout_s = 5;      // a kept-alive connection's wait for its next request
  double write_timeout_s = 10;    // one write the client does not take
};

}  // namespace swan
