// c = a + b over n float32 elements (grid-stride loop, so any n fits the workgroup-count limit).
#version 450
#ifndef WG
#define WG 256
#endif
layout(local_size_x = WG) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < p.n; i += stride) {
        c[i] = a[i] + b[i];
    }
}
