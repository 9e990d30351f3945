"""The Ray instance a fleet runs on: `start_local` (a local instance for `connect(local=...)`,
listening on loopback only) and `join` (a cluster at an address, or an error naming the address
within a stated timeout).

Ray's servers (GCS, raylet, object manager, workers, runtime-env agent) listen on all
interfaces unless the node's address is a loopback one, and Ray 2.x turns a loopback
`_node_ip_address` into the machine's routable address whenever multi-node clusters are enabled
(the default on Linux). A local fleet needs no other node, so the local instance is started as
a single-node one (Ray's switch for machines without clusters, `ENABLE_RAY_CLUSTER`, read while
`ray.init` picks the node's address), which puts every listener on 127.0.0.1.

Joining a cluster: Ray retries an address where nothing listens for minutes; `join` first opens
a TCP connection to it (at most `timeout` seconds) and reports what failed with the address.
"""

from __future__ import annotations

import socket

from ..errors import DeviceError

__all__ = ["start_local", "join", "reach", "CONNECT_TIMEOUT", "LOOPBACK"]

CONNECT_TIMEOUT = 30.0    # seconds `join` waits for a cluster's address to accept a connection
LOOPBACK = "127.0.0.1"


def start_local(ray, num_cpus: int, namespace: str) -> None:
    """Start a local Ray instance for this machine's own actors: no dashboard, and every
    listener on loopback where the installed Ray lets a single-node instance bind there."""
    from ray._private import ray_constants

    clusters = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    if clusters is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False   # read by ray.init to resolve the node address
    try:
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                 namespace=namespace, _node_ip_address=LOOPBACK)
    finally:
        if clusters is not None:
            ray_constants.ENABLE_RAY_CLUSTER = clusters


def reach(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Nothing, when something at `address` ("host:port", or "ray://host:port") accepts a TCP
    connection within `timeout` seconds; else DeviceError naming the address and the reason.
    An address without a port is left to Ray to judge."""
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise DeviceError(f"no Ray cluster at {address}: {why} (waited at most {timeout:g} s); "
                          "is the head started (`ray start --head`) and the port right?") from exc


def join(ray, address: str | None, namespace: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Join the Ray cluster at `address` (None or "auto": the one Ray finds on this machine),
    after checking within `timeout` seconds that the address accepts connections; a cluster
    Ray cannot join is a DeviceError naming the address."""
    if address not in (None, "auto"):
        reach(address, timeout)
    try:
        ray.init(address=address or "auto", log_to_driver=False, namespace=namespace)
    except ConnectionError as exc:   # Ray's error for an address without a cluster
        raise DeviceError(f"could not join the Ray cluster at {address or 'auto'}: {exc}") from exc
