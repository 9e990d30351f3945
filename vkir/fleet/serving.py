"""`vkir fleet serve|devices|stop`: a node's device actors on a Ray cluster.

`vkir fleet serve --address ADDRESS` starts, on this node, one detached actor per device (every
device this node's Vulkan loader reports, or `--devices SEL,SEL` in VKIR_DEVICE syntax, which
also reaches SwiftShader), named after the device's fingerprint, so `vkir.fleet.connect(ADDRESS)`
finds them and jobs can select devices by kind. The actors outlive the command; `vkir fleet stop`
ends them. Each command gives up on an address where nothing accepts a connection within
`--timeout` seconds, with an error naming the address.
"""

from __future__ import annotations

import sys

from .ray_instance import CONNECT_TIMEOUT

__all__ = ["add_command", "serve", "stop"]


def _init(address, timeout):
    from .connection import NAMESPACE, require_ray
    from .ray_instance import join

    ray = require_ray()
    if not ray.is_initialized():
        join(ray, address, NAMESPACE, timeout)
    return ray


def serve(address=None, selectors=None, timeout=CONNECT_TIMEOUT) -> list:
    """Start this node's device actors on the cluster at `address` (DeviceError naming it
    where nothing accepts a connection within `timeout` seconds); their names."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ..errors import DeviceError
    from .connection import ACTOR_PREFIX, NAMESPACE, local_env, new_actor_id
    from .fingerprint import Fingerprint
    from .worker import DeviceWorker

    ray = _init(address, timeout)
    node = ray.get_runtime_context().get_node_id()
    if not selectors:
        from ..runtime import devices

        selectors = [str(info.index) for info in devices()]
    remote = ray.remote(DeviceWorker)
    names = []
    for sel in selectors:
        options = dict(num_cpus=0, runtime_env={"env_vars": local_env(sel)},
                       scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False))
        probe = remote.options(**options).remote(sel)   # the device's fingerprint names the actor
        try:
            info = ray.get(probe.describe.remote())
            if isinstance(info, str):   # the selector names no device here
                raise DeviceError(f"vkir fleet serve: device {sel!r}: {info}")
            fingerprint = Fingerprint.of(info)
        finally:
            ray.kill(probe, no_restart=True)
        name = f"{ACTOR_PREFIX}{fingerprint.key}/{node[:8]}-{new_actor_id()}"
        handle = remote.options(name=name, namespace=NAMESPACE, lifetime="detached",
                                max_restarts=0, **options).remote(sel)
        ray.get(handle.pid.remote())   # started and its device opened
        names.append(name)
        print(f"serving {fingerprint} as {name}")
    return names


def stop(address=None, timeout=CONNECT_TIMEOUT) -> int:
    """Kill every served device actor of the cluster at `address` (joined as `serve` does);
    how many."""
    from .connection import NAMESPACE, served_actor_names

    ray = _init(address, timeout)
    names = served_actor_names(ray)
    for name in names:
        ray.kill(ray.get_actor(name, namespace=NAMESPACE), no_restart=True)
    return len(names)


def _cmd(args) -> int:
    if args.action == "serve":
        sels = [s for s in (args.devices or "").split(",") if s]
        serve(args.address, sels or None, args.timeout)
    elif args.action == "stop":
        print(f"stopped {stop(args.address, args.timeout)} device actor(s)")
    else:
        from .connection import connect

        fleet = connect(args.address or "auto", timeout=args.timeout)
        try:
            for fp, pid in zip(fleet.devices(), fleet.actor_pids()):
                print(f"{fp}  actor pid {pid}")
        finally:
            fleet.close()
    sys.stdout.flush()
    return 0


def add_command(sub) -> None:
    """Register `vkir fleet` on the CLI's subparsers."""
    p = sub.add_parser("fleet", help="serve this node's devices to a Ray cluster, list or stop them")
    p.add_argument("action", choices=("serve", "devices", "stop"))
    p.add_argument("--address", default=None, help="the Ray cluster (default: auto)")
    p.add_argument("--devices", default=None, metavar="SEL,SEL",
                   help="device selectors to serve (default: every device the loader reports)")
    p.add_argument("--timeout", type=float, default=CONNECT_TIMEOUT, metavar="SECONDS",
                   help="give up when nothing at the address accepts a connection within this "
                        f"many seconds (default {CONNECT_TIMEOUT:g})")
    p.set_defaults(fn=_cmd)
