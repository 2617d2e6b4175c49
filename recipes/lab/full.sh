#!/bin/sh
# Lab arm 1, the reference: the base model continued under full attention
# on both layers. Output: models/lab/full.   recipes/lab/full.sh
. "$(dirname "$0")/common.sh"
lab_continued full full
