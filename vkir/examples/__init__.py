"""Example kernels written in the vkir script, importable and runnable (`sync`: atomics and
subgroup operations; `raymarch`: a ray-marched scene, the picture of `vkir demo`; `glsl_frame`: a
frame rendered by an existing GLSL compute shader; `gradient_descent`: a tanh layer fitted with
vkir.Tape; `torch_layer`: a torch nn.Module whose layer is a vkir kernel, trained with
torch.optim)."""
