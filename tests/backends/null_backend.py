"""A recording null device, the smallest backend: launches record what they would run."""

import numpy as np

from vkir.backends import DeviceBackend
from vkir.seam import Allocator, Launch, Program, Runtime
from vkir.target import Limits, Target


class NullAllocator(Allocator):
    def allocate(self, nbytes):
        return np.zeros(nbytes, np.uint8)

    def free(self, buffer):
        pass

    def copy_in(self, buffer, array):
        buffer[:array.nbytes] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)

    def copy_out(self, buffer, out):
        out.reshape(-1).view(np.uint8)[:] = buffer[:out.nbytes]


class NullLaunch(Launch):
    def __init__(self, record, log):
        self.record, self.log = record, log

    def run(self, if_recorded=False, keep=None):
        self.log.append(self.record)
        return True


class NullProgram(Program):
    def __init__(self, spec, log):
        self.spec, self.log = spec, log

    def launch(self, buffers, push, groups, timed=False):
        return NullLaunch(dict(spec=self.spec, grid=tuple(groups), push=bytes(push),
                               buffers=tuple(buffers)), self.log)


class NullRuntime(Runtime):
    kind, name, limits = "null", "null", Limits()

    def __init__(self):
        self.allocator, self.dispatches = NullAllocator(), []

    def target(self, precise=False):
        return Target(kind="null", precise=precise)

    def program(self, spec):
        return NullProgram(spec, self.dispatches)


class NullBackend(DeviceBackend):
    name = "null"

    def runtime(self, device=None):
        return device if isinstance(device, NullRuntime) else NullRuntime()
