// Row-wise softmax of x[rows, cols] (float32): one workgroup per row; max and sum of exp are
// reduced in shared memory.
#version 450
#ifndef WG
#define WG 256
#endif
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint rows; uint cols; } p;

shared float scratch[WG];

void main() {
    uint row = gl_WorkGroupID.x, tid = gl_LocalInvocationID.x;
    uint base = row * p.cols;
    float m = -1.0 / 0.0;
    for (uint j = tid; j < p.cols; j += WG) {
        m = max(m, x[base + j]);
    }
    scratch[tid] = m;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (tid < s) {
            scratch[tid] = max(scratch[tid], scratch[tid + s]);
        }
        barrier();
    }
    m = scratch[0];
    barrier();
    float total = 0.0;
    for (uint j = tid; j < p.cols; j += WG) {
        total += exp(x[base + j] - m);
    }
    scratch[tid] = total;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (tid < s) {
            scratch[tid] += scratch[tid + s];
        }
        barrier();
    }
    float inv = 1.0 / scratch[0];
    for (uint j = tid; j < p.cols; j += WG) {
        y[base + j] = exp(x[base + j] - m) * inv;
    }
}
