// C[M, N] = A[M, K] @ B[K, N] (row-major float32), 16x16 tiles staged through shared memory.
#version 450
#define TILE 16
layout(local_size_x = TILE, local_size_y = TILE) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Params { uint M; uint N; uint K; } p;

shared float ta[TILE][TILE];
shared float tb[TILE][TILE];

void main() {
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint col = gl_WorkGroupID.x * TILE + tx;
    uint row = gl_WorkGroupID.y * TILE + ty;
    float acc = 0.0;
    for (uint k0 = 0; k0 < p.K; k0 += TILE) {
        ta[ty][tx] = (row < p.M && k0 + tx < p.K) ? a[row * p.K + k0 + tx] : 0.0;
        tb[ty][tx] = (k0 + ty < p.K && col < p.N) ? b[(k0 + ty) * p.N + col] : 0.0;
        barrier();
        for (uint k = 0; k < TILE; ++k) {
            acc += ta[ty][k] * tb[k][tx];
        }
        barrier();
    }
    if (row < p.M && col < p.N) {
        c[row * p.N + col] = acc;
    }
}
