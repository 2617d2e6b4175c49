// Compares two float32 safetensors files tensor by tensor: the largest
// |a - b| relative to the tensor's largest |a|. Exits 1 when a tensor is
// missing, has another shape, or differs by more than TOL.
//   usage: node compare_weights.mjs A.safetensors B.safetensors TOL
import { readFileSync } from "node:fs";

function load(path) {
  const bytes = readFileSync(path);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8"));
  const data = bytes.subarray(8 + headerLength);
  const tensors = new Map();
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    if (t.dtype !== "F32") throw new Error(`${path}: ${name} is ${t.dtype}, not F32`);
    const [begin, end] = t.data_offsets;
    const copy = Uint8Array.prototype.slice.call(data, begin, end);  // aligned for Float32Array
    tensors.set(name, { shape: t.shape, values: new Float32Array(copy.buffer) });
  }
  return tensors;
}

const [aPath, bPath, tolText] = process.argv.slice(2);
const tol = Number(tolText);
const a = load(aPath), b = load(bPath);
let worst = 0, worstName = "";
for (const [name, ta] of a) {
  const tb = b.get(name);
  if (!tb || tb.shape.join("x") !== ta.shape.join("x")) {
    console.log(`${name}: missing or another shape in ${bPath}`);
    process.exit(1);
  }
  let scale = 0, diff = 0;
  for (let i = 0; i < ta.values.length; ++i) {
    scale = Math.max(scale, Math.abs(ta.values[i]));
    diff = Math.max(diff, Math.abs(ta.values[i] - tb.values[i]));
  }
  const relative = diff / Math.max(scale, 1e-30);
  if (relative > worst) [worst, worstName] = [relative, name];
}
if (a.size !== b.size) { console.log(`${a.size} tensors against ${b.size}`); process.exit(1); }
console.log(`${a.size} tensors, largest relative difference ${worst.toExponential(2)} (${worstName || "none"})`);
process.exit(worst <= tol ? 0 : 1);
