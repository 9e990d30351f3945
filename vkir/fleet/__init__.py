"""Past one machine: kernels, checks and tuning across a fleet of Vulkan devices, on Ray
(the optional extra `vkir[fleet]`).

    fleet = vkir.fleet.connect(local=("lavapipe", "swiftshader"))   # or connect("ray://head:10001")
    fleet.devices()                    # [Fingerprint, ...], one per device actor
    fleet.check(f, a, b, c)            # [FleetResult(device, ok, error, seconds), ...]
    k = template.build(fleet=fleet, M=1024, N=1024, K=1024)   # tuned per fingerprint
    fleet.close()

One Ray actor owns one device (vkir.fleet.worker); `vkir fleet serve` starts a node's actors on a
cluster. Kernels are built where a job starts and only runs travel (vkir.fleet.jobs); faults are
accounted for job by job (vkir.fleet.dispatch); tuning is vkir.fleet.tuning. The Ray instance
(a local one listening on loopback, or a cluster joined within a timeout) is
vkir.fleet.ray_instance.
"""

from .connection import Fleet, FleetResult, connect
from .fingerprint import Fingerprint
from .reports import format_results

__all__ = ["connect", "Fleet", "FleetResult", "Fingerprint", "format_results"]
