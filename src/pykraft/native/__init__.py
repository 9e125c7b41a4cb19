"""The consensus core compiled with mypyc, used when a build matches the sources (issue 30).

    python -m pykraft.native build     # compile (about a minute on one core); idempotent
    python -m pykraft.native status    # whether this interpreter would use the build, and why

Theory of operation. ``MODULES`` (the sans-I/O raft core, the record batch codec and the
simulator's parts: the code every simulated event and every replicated batch runs through;
the metadata records' codec, which snapshots run a million times; the metadata image and
its timeline, which a restarted controller replays a snapshot into)
are compiled by mypyc, mypy's compiler for typed Python, into C extensions under
``build/native/<interpreter tag>/`` beside the source tree. The same ``.py`` files remain
the source of truth: nothing is edited for the build and nothing is copied into ``src/``.

``pykraft/__init__`` calls ``install()`` before any other pykraft module is imported. It
reads the build's ``manifest.json`` (the SHA-256 of each compiled module's source, the
interpreter's extension suffix, the mypy version) and, only when every compiled module's
source is byte-for-byte what was compiled, puts a finder first on ``sys.meta_path`` that
loads those modules from the build. Anything else -- no build, a source edited since, another
interpreter, ``PYKRAFT_NATIVE=0`` in the environment -- leaves the interpreted modules in
use: a stale build never runs. All or nothing: the compiled modules call each other
directly, so a mix would not be the code that was compiled.

Why a compiler and not hand-written C: the core stays one readable Python source, checked by
mypy strict, and the build is the same code (``tests/sim/test_native.py`` runs simulations
in both forms and compares their fingerprints: every event, in order). Compiled modules do
not allow their functions or classes to be patched at run time, so the in-process test suite
(which breaks the core on purpose to prove the checker catches it) runs interpreted
(``tests/conftest.py``); the processes the tests start -- nodes, fault runs -- use the build.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Final

# What is compiled: the modules every simulated event and every replicated batch runs
# through: the core, the batch codec, and the simulator's nodes, network, storage, faults and
# invariant checks; and the codec of the metadata records a snapshot holds by the million.
# Not the simulator's event loop (sim/simulator.py: the process crashed in mypyc's code for
# it; not investigated) nor the controller and its image (not measured yet).
MODULES: Final = (
    "pykraft.raft.admin",
    "pykraft.raft.api",
    "pykraft.raft.config",
    "pykraft.raft.context",
    "pykraft.raft.control",
    "pykraft.raft.core",
    "pykraft.raft.describe",
    "pykraft.raft.dispatch",
    "pykraft.raft.elections",
    "pykraft.raft.interfaces",
    "pykraft.raft.invariants",
    "pykraft.raft.joining",
    "pykraft.raft.kraft_version",
    "pykraft.raft.membership",
    "pykraft.raft.messages",
    "pykraft.raft.outputs",
    "pykraft.raft.progress",
    "pykraft.raft.quorum",
    "pykraft.raft.reassignment",
    "pykraft.raft.replication",
    "pykraft.raft.requests",
    "pykraft.raft.roles",
    "pykraft.raft.snapshots",
    "pykraft.raft.state",
    "pykraft.raft.types",
    "pykraft.raft.voters",
    "pykraft.records._batch",
    "pykraft.sim.app",
    "pykraft.sim.history",
    "pykraft.sim.invariants",
    "pykraft.sim.memory",
    "pykraft.sim.nemesis",
    "pykraft.sim.network",
    "pykraft.sim.node",
    "pykraft.sim.stats",
    "pykraft.sim.voter_invariants",
    # The metadata codec of the records a large cluster holds by the million (a snapshot is
    # one PartitionRecord per partition): their generated classes and the schema runtime.
    "pykraft.schema.runtime",
    "pykraft.metadata.serde",
    "pykraft.metadata.records.partition_record",
    "pykraft.metadata.records.partition_change_record",
    "pykraft.metadata.records.topic_record",
    "pykraft.metadata.records.config_record",
    # The metadata image: a restarted controller replays a million PartitionRecords into it
    # before it is ready (replay 3.5 -> 1.7 us per record at 100,000 partitions).
    "pykraft.metadata.image",
    "pykraft.metadata.parts.cluster",
    "pykraft.metadata.parts.configs",
    "pykraft.metadata.parts.errors",
    "pykraft.metadata.parts.features",
    "pykraft.metadata.parts.producer_ids",
    "pykraft.metadata.parts.topics",
    "pykraft.metadata.timeline",
    "pykraft.metadata.tagged",
)
ENV: Final = "PYKRAFT_NATIVE"  # "0": never use the build
SRC: Final = Path(__file__).resolve().parents[2]  # the directory holding pykraft/
SUFFIX: Final = importlib.machinery.EXTENSION_SUFFIXES[0]
MANIFEST: Final = "manifest.json"


def build_dir() -> Path:
    """``build/native/<tag>`` at the repository's root (``src/..``)."""
    return SRC.parent / "build" / "native" / sys.implementation.cache_tag


def source_of(module: str) -> Path:
    return SRC.joinpath(*module.split(".")).with_suffix(".py")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True, slots=True)
class Status:
    """Whether this interpreter uses the build (``active``) and why (``reason``)."""

    active: bool
    reason: str


class _Finder(importlib.abc.MetaPathFinder):
    """Loads ``modules`` (and mypyc's shared library ``group``) from ``root``."""

    def __init__(self, root: Path, modules: frozenset[str], group: str) -> None:
        self.root = root
        self.modules = modules
        self.group = group

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.group:
            location = self.root / f"{fullname}{SUFFIX}"
        elif fullname in self.modules:
            location = self.root.joinpath(*fullname.split(".")).with_name(
                fullname.rsplit(".", 1)[1] + SUFFIX
            )
        else:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(location))
        return importlib.util.spec_from_file_location(fullname, location, loader=loader)


_status = Status(False, "not installed")


def check(root: Path | None = None, *, honour_env: bool = True) -> tuple[Status, str]:
    """(whether the build at ``root`` matches the sources and this interpreter, its mypyc
    group's module name); ``honour_env``: ``PYKRAFT_NATIVE=0`` says no (the builder asks
    whether the build is current whatever the environment says)."""
    root = build_dir() if root is None else root
    if honour_env and os.environ.get(ENV, "1") == "0":
        return Status(False, f"{ENV}=0"), ""
    try:
        manifest = json.loads((root / MANIFEST).read_text())
    except (OSError, ValueError):
        return Status(False, f"no build at {root} (python -m pykraft.native build)"), ""
    if manifest.get("suffix") != SUFFIX:
        return Status(False, f"built for {manifest.get('suffix')}, this is {SUFFIX}"), ""
    compiled: dict[str, str] = manifest.get("modules", {})
    if set(compiled) != set(MODULES):
        return Status(False, "built from another module list: rebuild"), ""
    for module in MODULES:
        try:
            if digest(source_of(module)) != compiled[module]:
                return Status(False, f"{module} changed since the build: rebuild"), ""
        except OSError:
            return Status(False, f"{module}'s source is missing"), ""
    return Status(True, f"mypyc {manifest.get('mypy')} build at {root}"), manifest["group"]


def install() -> Status:
    """Put the build's finder first on ``sys.meta_path`` when the build is current
    (``pykraft/__init__``; once per process, before any compiled module is imported)."""
    global _status
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return _status
    if any(module in sys.modules for module in MODULES):
        _status = Status(False, "imported before pykraft.native.install")
        return _status
    status, group = check()
    if status.active:
        sys.meta_path.insert(0, _Finder(build_dir(), frozenset(MODULES), group))
    _status = status
    return status


def status() -> Status:
    """Whether this process loaded the compiled modules (``install``'s verdict, checked
    against what was actually imported)."""
    loaded = [sys.modules[m] for m in MODULES if m in sys.modules]
    if _status.active and any(not (m.__file__ or "").endswith(SUFFIX) for m in loaded):
        return Status(False, "a compiled module was loaded from source")
    return _status
