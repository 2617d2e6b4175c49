#!/bin/sh
# Lab arm 4: the 1:1 hybrid, layer 0 a window of 64, the full layer last.
# (With 2 layers 1:1 is the ratio that puts one full layer last; 3:1 needs
# 4 layers, and 4-layer shapes did not learn MQAR in this budget.)
# Output: models/lab/hybrid.   recipes/lab/hybrid.sh
. "$(dirname "$0")/common.sh"
lab_continued hybrid hybrid:1:1,window:64
