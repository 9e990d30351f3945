"""What runs a kernel for a caller, around the Vulkan runtime: shader kernels from GLSL/SPIR-V
(`shader`), sequences of launches and their handles (`sequences`), profiling (`profiling`),
bounds-checked kernels (`bounds_check`), the loop budget of llvmpipe's loop limit
(`loop_budget`) and the checks of the loops it cannot bound (`loop_cut`; both kinds of check
share `record_check`), sizes evaluated at call time (`shape_eval`) and DLPack export (`dlpack`)."""
