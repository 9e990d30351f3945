// y[i] = alpha * x[i] + beta (float32 and int32 push constants: checks std430 push-constant layout).
#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { int n; float alpha; float beta; } p;

void main() {
    int i = int(gl_GlobalInvocationID.x);
    if (i < p.n) {
        y[i] = p.alpha * x[i] + p.beta;
    }
}
