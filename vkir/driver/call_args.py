"""Arguments of kernel calls that are neither numpy arrays nor bindable DeviceArrays, put in the
shape the call machinery takes: torch CPU tensors become numpy views of their memory (DLPack,
no copy; the call then uses the memory in place where the device can import it, else stages one
copy each way, as for any numpy array), and DeviceArray views the device cannot bind at their
offset (vkir.runtime.slices) become numpy views of their host-visible bytes.

torch is never imported here: a tensor can only exist where the caller imported torch, so the
test is against `sys.modules`.
"""

from __future__ import annotations

import sys

import numpy as np

from ..errors import ArgumentError

__all__ = ["is_tensor", "tensor_as_numpy", "call_arguments", "misaligned_error"]


def is_tensor(value) -> bool:
    """Whether `value` is a torch Tensor (False without importing torch where it is not)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def tensor_as_numpy(t, where: str) -> np.ndarray:
    """A numpy view of CPU tensor `t`'s memory (its autograd history left aside: a kernel reads
    and writes the values); ArgumentError for other devices and dtypes numpy lacks."""
    if t.device.type != "cpu":
        raise ArgumentError(f"{where}: a torch tensor on {t.device} (vkir takes CPU tensors; "
                            "move it with .cpu())")
    try:
        return np.from_dlpack(t.detach())
    except (BufferError, RuntimeError, TypeError) as exc:
        raise ArgumentError(f"{where}: a torch {t.dtype} tensor cannot be read as an array "
                            f"({exc})") from None


def misaligned_error(where: str, a) -> ArgumentError:
    """The refusal of a view whose offset the device cannot bind and whose memory the host
    cannot reach."""
    align = a.device.info.limits.min_storage_buffer_offset_alignment
    return ArgumentError(f"{where} is a view {a.buffer.start} bytes into its array, which "
                         f"{a.device.info.name!r} cannot bind (buffer offsets there are "
                         f"multiples of {align} bytes); slice at a multiple of {align} bytes, "
                         "or pass a copy (vkir.array(view))")


def call_arguments(args, params, where: str, host_ok: bool = True, written=frozenset(),
                   device=None):
    """`args` with torch tensors as numpy views, and (`host_ok`) misaligned DeviceArray views
    as numpy views of their bytes; `args` itself when there are none. `params[i].name` names
    argument i in messages (its index past the parameters); `written` holds the positions the
    kernel writes (a non-contiguous tensor there is refused: its copy would not be written
    back). Where the host may not stage (`host_ok` False: a sequence, which makes no hidden
    copies), a tensor is imported in place on `device` as a DeviceArray (`vkir.asarray` with
    copy=False; ArgumentError saying why where it cannot be)."""
    from .arrays import DeviceArray

    out = None
    for i, a in enumerate(args):
        if type(a) is DeviceArray:
            if not getattr(a.buffer, "misaligned", False):
                continue
            what = f"{where}: argument {_name(params, i)!r}"
            host = a.host_view() if host_ok else None
            if host is None:
                raise misaligned_error(what, a)
            value = host
        elif is_tensor(a):
            what = f"{where}: argument {_name(params, i)!r}"
            value = tensor_as_numpy(a, what)
            if not host_ok:
                value = _imported(a.detach(), device, what)
            elif not value.flags.c_contiguous:
                if i in written:
                    raise ArgumentError(f"{what} is a non-contiguous torch tensor, which the "
                                        "kernel writes; pass a contiguous one (.contiguous(), "
                                        "then copy the result back)")
                value = np.ascontiguousarray(value)   # read only: one copy in
        else:
            continue
        if out is None:
            out = list(args)
        out[i] = value
    return args if out is None else out


def _imported(tensor, device, what: str):
    """`tensor`'s memory as a DeviceArray over the same bytes, for a sequence."""
    from .interop import asarray

    try:
        return asarray(tensor, device=device, copy=False)
    except ArgumentError as exc:
        raise ArgumentError(f"{what}: inside a sequence a torch tensor must be memory the device "
                            f"can use in place, and this one is not ({exc}); pass a DeviceArray "
                            "(vkir.asarray(tensor))") from None


def _name(params, i: int) -> str:
    return params[i].name if i < len(params) else f"#{i}"
