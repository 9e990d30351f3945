// Sum reduction, one pass of two: each workgroup accumulates a grid-stride slice of x[0:n] and
// reduces it in shared memory (tree with barriers) to partial[workgroup]. Run it on x with G groups,
// then on partial with n=G and one group to get the total in partial2[0].
#version 450
#ifndef WG
#define WG 256
#endif
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Partial { float partial[]; };
layout(push_constant) uniform Params { uint n; } p;

shared float scratch[WG];

void main() {
    uint tid = gl_LocalInvocationID.x;
    float acc = 0.0;
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        acc += x[i];
    }
    scratch[tid] = acc;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (tid < s) {
            scratch[tid] += scratch[tid + s];
        }
        barrier();
    }
    if (tid == 0) {
        partial[gl_WorkGroupID.x] = scratch[0];
    }
}
