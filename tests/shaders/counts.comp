// Integer kernel: out[i] = in[i] * k + i, and a read-write counter buffer (atomicAdd of the
// matching elements): int32 and uint32 buffers, a fixed local size of 64.
#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer In { int values[]; };
layout(std430, set = 0, binding = 1) buffer Out { int result[]; };
layout(std430, set = 0, binding = 2) buffer Counter { uint matches; uint total[]; };
layout(push_constant) uniform Params { uint n; int k; int target; } p;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) {
        result[i] = values[i] * p.k + int(i);
        if (values[i] == p.target) {
            atomicAdd(matches, 1u);
        }
        atomicAdd(total[i % 4u], 1u);
    }
}
