"""Generate Python codecs from Kafka's message-definition JSON files.

    python -m pykraft.schema.generate            # regenerate every package in PACKAGES
    python -m pykraft.schema.generate --check    # exit 1 if a generated file is stale

Each JSON file becomes one module: a frozen, slotted dataclass per struct (fields in Kafka's
order, snake_case names, Kafka's defaults, ``unknown_tagged_fields`` so a decode/encode round
trip keeps tags this version does not know) and, per version, one straight-line writer and
reader. Consecutive fixed-size fields are packed and unpacked with one ``struct`` call. The
message class gets ``encode(version)``, ``decode(data, version)``, ``write``/``read`` (for
framing) and its ``API_KEY`` and version bounds. A package's ``__init__`` lists the classes
and, for metadata records, maps api keys to them.

Rules from Kafka's generator (``generator/src/main/java/org/apache/kafka/message``), as
applied here: a field exists only in its ``versions``; writing a non-default value in a
version without the field raises ``UnsupportedVersionError`` unless the field is
``ignorable``; in flexible versions a field with ``taggedVersions`` is written only when it
differs from its default, in the trailing tagged section, in ascending tag order; reading
keeps unknown tags.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pykraft.schema.codegen import MessageGenerator, module_name
from pykraft.schema.spec import MessageSpec, load_spec

__all__ = ["PACKAGES", "Package", "generate_message", "generate_package", "main"]

_ROOT: Final = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Package:
    """A directory of JSON files and the package its modules are generated into."""

    schemas: Path
    target: Path
    module: str  # dotted name of ``target``
    registry: bool  # write API_KEY -> class maps (metadata records)


PACKAGES: Final = (
    # KRaft's control records (LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters),
    # from kafka-clients' common/message: pykraft keeps the tagged fields it does not know.
    Package(
        _ROOT / "records" / "schemas",
        _ROOT / "records" / "control_records",
        "pykraft.records.control_records",
        registry=False,
    ),
    Package(
        _ROOT / "metadata" / "schemas",
        _ROOT / "metadata" / "records",
        "pykraft.metadata.records",
        registry=True,
    ),
    # RPC versions kio does not have (KIP-435's ListPartitionReassignments v1, Kafka 4.4.0's
    # UnregisterController v0 and ApiVersions v5), served beside kio's through
    # ``pykraft.protocol.ext``.
    Package(
        _ROOT / "protocol" / "schemas",
        _ROOT / "protocol" / "generated",
        "pykraft.protocol.generated",
        registry=False,
    ),
    # The ZooKeeper-era controller RPCs a migrating KRaft controller sends to ZooKeeper-mode
    # brokers (LeaderAndIsr, UpdateMetadata, StopReplica: Kafka 3.9's JSON; kio has none).
    Package(
        _ROOT / "migration" / "schemas",
        _ROOT / "migration" / "rpc",
        "pykraft.migration.rpc",
        registry=False,
    ),
)


def generate_message(spec: MessageSpec, source: str) -> str:
    return MessageGenerator(spec).module(source)


def generate_package(package: Package) -> dict[Path, str]:
    """``{path: text}`` of every module of ``package`` (nothing is written)."""
    files: dict[Path, str] = {}
    specs = []
    for path in sorted(package.schemas.glob("*.json")):
        spec = load_spec(path)
        specs.append(spec)
        source = path.relative_to(_ROOT.parent).as_posix()
        files[package.target / f"{module_name(spec.name)}.py"] = generate_message(spec, source)
    lines = [
        f'"""Codecs generated from ``{package.schemas.relative_to(_ROOT.parent).as_posix()}``'
        ' (``python -m pykraft.schema.generate``). Do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, Final",
        "",
    ]
    for spec in specs:
        lines.append(f"from {package.module}.{module_name(spec.name)} import {spec.name}")
    lines.append("")
    if package.registry:
        lines.append("RECORD_TYPES: Final[dict[int, type[Any]]] = {")
        for spec in sorted(specs, key=lambda s: s.api_key or 0):
            lines.append(f"    {spec.api_key}: {spec.name},")
        lines.append("}")
        lines.append('"""Metadata record classes by api key (the record type in the log)."""')
        lines.append("")
    names = [s.name for s in specs] + (["RECORD_TYPES"] if package.registry else [])
    lines.append(f"__all__ = [{', '.join(repr(n) for n in sorted(names))}]")
    files[package.target / "__init__.py"] = "\n".join(lines) + "\n"
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pykraft.schema.generate")
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    stale = []
    for package in PACKAGES:
        files = generate_package(package)
        package.target.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            current = path.read_text() if path.exists() else None
            if current == text:
                continue
            stale.append(path)
            if not args.check:
                path.write_text(text)
        for old in package.target.glob("*.py"):
            if old not in files:
                stale.append(old)
                if not args.check:
                    old.unlink()
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'} {path}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
