// y[i] = SCALE * alpha * x[i] + dot(v[i], weights) + offset + mode + bias[i % 4] (if USE_BIAS):
// three storage buffers, a uniform buffer, push constants of mixed types (int, float, vec4) and
// specialization constants, one of them the local size.
#version 450
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const float SCALE = 1.0;
layout(constant_id = 2) const bool USE_BIAS = true;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer V { vec4 v[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };
layout(std140, set = 0, binding = 3) uniform Coeffs { vec4 weights; float offset; int mode; } coeffs;
layout(push_constant) uniform Params { int n; float alpha; vec4 bias; } p;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < uint(p.n)) {
        float r = SCALE * p.alpha * x[i] + dot(v[i], coeffs.weights) + coeffs.offset;
        if (USE_BIAS) {
            r += p.bias[i % 4u];
        }
        y[i] = r + float(coeffs.mode);
    }
}
