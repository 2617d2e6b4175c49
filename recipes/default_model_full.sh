#!/bin/sh
# The full-attention twin of recipes/default_model.sh: the same tokenizer,
# data, model shape and schedule, every layer full causal attention.
#   recipes/default_model_full.sh [OUT]   (OUT default: runs/default; the run is OUT/run-full)
exec env PLAN=full "$(dirname "$0")/default_model.sh" "$@"
