"""The context variable through which a `vkir.Tape` (vkir.autodiff.recording) sees kernel calls.

A Kernel call made while a tape is active is handed to the tape's `call(kernel, args, samplers)`
instead of running directly: the tape checks the arguments, runs the call with itself switched
off (so the call is not recorded twice, and the tape's own adjoint kernels are never recorded),
and records it. Per thread and per asyncio task, as `vkir.sequence()`'s block is; the driver
imports nothing of vkir.autodiff.
"""

from __future__ import annotations

import contextvars

ACTIVE_TAPE: contextvars.ContextVar = contextvars.ContextVar("vkir_active_tape", default=None)
