#version 450
// out [n] = act(gate) * up: SiLU (Llama's SwiGLU) or, with GELU_TANH,
// GELU's tanh approximation (Gemma), as ops/elementwise.h's SiluMul and
// GeluTanhMul.

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Gate { float gate[]; };  // [n]
layout(std430, binding = 1) readonly buffer Up { float up[]; };      // [n]
layout(std430, binding = 2) writeonly buffer Output { float y[]; };  // [n]

layout(push_constant) uniform Shape { uint n; } shape;

void main() {
  const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
  if (i >= shape.n) return;
  const float g = gate[i];
#if defined(GELU_TANH)
  // g/2 (1 + tanh(z)), z = sqrt(2/pi) (g + 0.044715 g³); tanh(z) = 1 - 2/(e^{2z} + 1)
  // keeps large |z| finite where GLSL's tanh may not.
  const float z = 0.7978845608028654 * (g + 0.044715 * g * g * g);
  const float th = 1.0 - 2.0 / (exp(min(2.0 * z, 80.0)) + 1.0);
  y[i] = 0.5 * g * (1.0 + th) * up[i];
#else
  y[i] = g / (1.0 + exp(-g)) * up[i];
#endif
}
