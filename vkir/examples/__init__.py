"""Example kernels written in the vkir script, importable and runnable (`sync`: atomics and
subgroup operations)."""
