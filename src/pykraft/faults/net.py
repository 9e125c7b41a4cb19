"""Real network partitions between local processes: one Linux network namespace per node.

Each node ``i`` gets a namespace ``<prefix><i>`` whose ``eth0`` is one end of a veth pair; the
other end is a port of a bridge in the root namespace, which holds ``<subnet>.1`` (where the
harness, its workload client and its metrics scraper run). Node ``i`` is ``<subnet>.<10+i>``.

Faults, all undone by ``heal``:
- ``isolate(i)``: the bridge port of ``i`` goes down (no traffic in or out, clients included);
- ``drop(i, j)``: packets from ``i`` to ``j`` are lost, silently, as on a real network (``i``'s
  neighbour entry for ``j`` is pinned to a MAC address nobody has); ``j`` still reaches ``i``:
  one way. ``drop`` both ways between two groups is a split.

Needs root and iproute2 (``ip``); nothing else (no iptables, no tc qdiscs: the kernels this
runs on may have neither).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Sequence

__all__ = ["Network", "NetworkUnavailable"]

_NOWHERE_MAC = "02:00:5e:00:00:fe"  # locally administered, never assigned here
_IFACE = "eth0"


class NetworkUnavailable(RuntimeError):
    """Namespaces cannot be made here (not root, no ``ip``)."""


def _ip_path() -> str:
    """iproute2's ``ip``, also when the sbin directories are not on PATH (a plain shell)."""
    found = shutil.which("ip") or next(
        (p for p in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip") if os.path.exists(p)),
        None,
    )
    if found is None:
        raise NetworkUnavailable("iproute2 (ip) is not installed")
    return found


def _ip(*args: str, netns: str | None = None, check: bool = True) -> None:
    ip = _ip_path()
    argv = [ip, *(("netns", "exec", netns, ip) if netns else ()), *args]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip()}")


class Network:
    """Namespaces for node ids ``ids``; ``setup`` makes them, ``teardown`` removes them."""

    def __init__(self, ids: Sequence[int], *, tag: str | None = None) -> None:
        tag = tag or f"{os.getpid() % 4096:03x}"
        self.prefix = f"pk{tag}n"  # interface names stay under 16 characters
        self.bridge = f"pk{tag}br"
        self.subnet = f"10.{77 + (os.getpid() % 100)}.{os.getpid() % 250}"
        self.ids = list(ids)
        self._up = False

    def ns(self, node_id: int) -> str:
        return f"{self.prefix}{node_id}"

    def address(self, node_id: int) -> str:
        return f"{self.subnet}.{10 + node_id}"

    def _port(self, node_id: int) -> str:
        return f"{self.prefix}{node_id}h"

    def wrap(self, node_id: int, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside the node's namespace (``ip netns exec`` execs it: same pid)."""
        return [_ip_path(), "netns", "exec", self.ns(node_id), *argv]

    def setup(self) -> None:
        if os.geteuid() != 0:
            raise NetworkUnavailable("network namespaces need root")
        _ip("link", "add", self.bridge, "type", "bridge")
        self._up = True
        _ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i in self.ids:
            ns, port = self.ns(i), self._port(i)
            _ip("netns", "add", ns)
            _ip("link", "add", port, "type", "veth", "peer", "name", f"{port}x")
            _ip("link", "set", f"{port}x", "netns", ns)
            _ip("link", "set", f"{port}x", "name", _IFACE, netns=ns)
            _ip("addr", "add", f"{self.address(i)}/24", "dev", _IFACE, netns=ns)
            _ip("link", "set", _IFACE, "up", netns=ns)
            _ip("link", "set", "lo", "up", netns=ns)
            _ip("link", "set", port, "master", self.bridge)
            _ip("link", "set", port, "up")

    def teardown(self) -> None:
        if not self._up:
            return
        for i in self.ids:
            _ip("netns", "del", self.ns(i), check=False)  # takes its veth pair with it
        _ip("link", "del", self.bridge, check=False)
        self._up = False

    def isolate(self, node_id: int) -> None:
        _ip("link", "set", self._port(node_id), "down")

    def drop(self, src: int, dst: int) -> None:
        """Packets from ``src`` to ``dst`` are lost (one way)."""
        _ip(
            "neigh", "replace", self.address(dst), "lladdr", _NOWHERE_MAC,
            "dev", _IFACE, "nud", "permanent", netns=self.ns(src),
        )  # fmt: skip

    def cut(self, side: Sequence[int], others: Sequence[int]) -> None:
        """No packets between ``side`` and ``others``, either way (a split)."""
        for a in side:
            for b in others:
                if a != b:
                    self.drop(a, b)
                    self.drop(b, a)

    def heal(self) -> None:
        for i in self.ids:
            _ip("link", "set", self._port(i), "up", check=False)
            for j in self.ids:
                if j != i:
                    _ip(
                        "neigh",
                        "del",
                        self.address(j),
                        "dev",
                        _IFACE,
                        netns=self.ns(i),
                        check=False,
                    )

    def __enter__(self) -> Network:
        self.setup()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.teardown()
