#!/usr/bin/env bash
# The server's load report, on loopback and bounded: CLIENTS streaming
# clients for SECONDS, ABORT_RATE of the requests aborted by their client
# mid-stream, a few malformed ones; prints requests, errors, 429s, tokens/s,
# time to first token (p50, p90, p99, max), and the resident and allocator
# in-use bytes idle before, after the first round and after the last. Fails
# on any failure or 429. Figures: docs/serving.md, "Under load".
# Usage: bench/serve_load.sh [MODEL] [CLIENTS] [SECONDS] [ABORT_RATE] [BUILD_DIR]
#   (defaults: models/swan-7m 16 60 0.3 build; the prompt cache off, -t 1)
set -euo pipefail
cd "$(dirname "$0")/.."
model="${1:-models/swan-7m}" clients="${2:-16}" seconds="${3:-60}" abort_rate="${4:-0.3}" build="${5:-build}"
echo "swan $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p')"
exec node scripts/load_test_serve.mjs --swan "$build/swan" --model "$model" --clients "$clients" \
  --duration "$seconds" --rounds 4 --disconnect-rate "$abort_rate" --no-prompt-cache --threads 1 --max-429 0
