// What the lab's pages compute from `swan compare --json` plans.

// Accuracy over the bins whose distances all lie in [lo, hi), with how many
// answers it counts (NaN and 0 when no bin lies there).
export function accuracy(plan, lo, hi = Infinity) {
  let correct = 0, items = 0;
  for (const b of plan.bins)
    if (b.lo >= lo && b.hi <= hi) {
      correct += b.correct;
      items += b.items;
    }
  return items ? { value: correct / items, items } : { value: NaN, items: 0 };
}

// A share as a percentage with one decimal, '-' for NaN.
export const pct = (x) => (Number.isFinite(x) ? (100 * x).toFixed(1) + '%' : '-');
