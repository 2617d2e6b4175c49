// The decode side of the fast kernel: a task of a FlashPlan with `decode`
// set (one query or a few, at most kDecodeMaxRows rows per KV head).
#pragma once

#include <cstdint>

#include "attention/flash_plan.h"

namespace swan {

// Runs decode task `task` of `plan` on the best SIMD target of this CPU and
// hands its rows' softmax states to plan.StoreRow.
void RunDecodeTask(const FlashPlan& plan, int64_t task);

}  // namespace swan
