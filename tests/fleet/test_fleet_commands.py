"""`vkir fleet serve|devices|stop` against an address where nothing listens: each command ends
within its `--timeout` with one error line naming the address (no traceback, no endless retry
of Ray's)."""

import socket
import subprocess
import sys

import pytest

pytest.importorskip("ray")   # the extra vkir[fleet]


def _closed_port() -> int:
    """A port of 127.0.0.1 where nothing listens (bound for a moment, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("action", ["serve", "devices", "stop"])
def test_a_fleet_command_to_an_address_without_a_cluster_ends_naming_it(action):
    address = f"127.0.0.1:{_closed_port()}"
    done = subprocess.run([sys.executable, "-m", "vkir.tools.cli", "fleet", action,
                           "--address", address, "--timeout", "5"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"vkir: error: no Ray cluster at {address}" in done.stderr, done.stderr
    assert "waited at most 5 s" in done.stderr and "Traceback" not in done.stderr
