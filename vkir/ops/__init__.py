"""vkir.ops: fast kernels out of the box.

Each op takes numpy arrays or DeviceArrays (all on one device) and returns a DeviceArray when any
input is one, else a numpy array; every op also takes `device=` and `out=`. The ops take float32
data (argmax returns int32 indices). Each op's kernel template is readable as
`vkir.ops.<op>.kernel(...)`: a Python function returning the PrimFunc for given shapes and
schedule parameters, tuned per device with `vkir.autotune` (`vkir.ops.<op>.kernel.build(...)`).
An op uses the tuned config recorded for the device when there is one, else the device's default
config; VKIR_AUTOTUNE=1 makes a call tune a shape it has not seen.
"""

from .conv import conv2d
from .counting import histogram
from .layout import transpose
from .linalg import matmul
from .norm import layer_norm, softmax
from .reduce import argmax, max, mean, min, sum
from .scan import cumsum
from .sorting import argsort, sort
from ..autodiff.op_tape import differentiable as _differentiable

# inside a vkir.Tape these are recorded and differentiated; the others are refused by name
conv2d, cumsum, layer_norm, matmul, mean, softmax, sort, sum = (
    _differentiable(f) for f in (conv2d, cumsum, layer_norm, matmul, mean, softmax, sort, sum))

__all__ = ["argmax", "argsort", "conv2d", "cumsum", "histogram", "layer_norm", "matmul", "max",
           "mean", "min", "softmax", "sort", "sum", "transpose"]
