#!/bin/sh
# Lab arm 2: the base model continued under a window of 64 keys on both
# layers (relay reach 128). Output: models/lab/swa64.   recipes/lab/swa64.sh
. "$(dirname "$0")/common.sh"
lab_continued swa64 swa:64
