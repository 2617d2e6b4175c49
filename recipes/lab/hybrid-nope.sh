#!/bin/sh
# Lab arm 5: the hybrid of arm 4 with no position encoding on its full
# layer (NoPE), evaluated by the report at 1x, 2x and 4x the training
# context. Output: models/lab/hybrid-nope.   recipes/lab/hybrid-nope.sh
. "$(dirname "$0")/common.sh"
lab_continued hybrid-nope hybrid:1:1,window:64,nope:full
