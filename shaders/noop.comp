// One invocation that does nothing: measures dispatch round-trip latency. Binding 0 is declared
// so the launch has the same shape as a one-buffer kernel.
#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Data { float data[]; };

void main() {
}
