// Which KV head a cache store's x-th head is. A per-head layer keeps its
// full heads and its window heads in stores of their own, each naming its
// heads as a bit mask (bit h: KV head h); 0 means every head, in order.
uint StoredHead(uint mask, uint x) {
  if (mask == 0u) return x;
  for (uint h = 0u; h < 32u; ++h) {
    if (((mask >> h) & 1u) == 0u) continue;
    if (x == 0u) return h;
    --x;
  }
  return 0u;
}
