#!/bin/sh
# Lab arm 3: StreamingLLM's sinks: a window of 64 keys + the first 4 tokens
# on both layers. Output: models/lab/swa64-sinks4.   recipes/lab/swa64-sinks4.sh
. "$(dirname "$0")/common.sh"
lab_continued swa64-sinks4 swa:64,sinks:4
