"""The export format of ``pykraft migration export``: one JSON object per znode a migration
reads (``zk_client.read_snapshot``), sorted by path -- ``{"path": ..., "data": base64 or
null, "version": zkVersion, "children": [...]}`` -- and back into a ``ZkSnapshot``."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

from pykraft.migration import zk_data

__all__ = ["export_lines", "snapshot_of"]


def export_lines(snapshot: zk_data.ZkSnapshot) -> Iterator[str]:
    """The export format: one JSON object per znode, sorted by path."""
    for path in sorted(snapshot.nodes):
        node = snapshot.nodes[path]
        data = None if node.data is None else base64.b64encode(node.data).decode()
        yield json.dumps(
            {"path": path, "data": data, "version": node.version, "children": list(node.children)},
            separators=(",", ":"),
        )


def snapshot_of(rows: Iterable[Any]) -> zk_data.ZkSnapshot:
    """A ZkSnapshot from export rows (dicts or Rows with the export's fields)."""
    nodes = {}
    for row in rows:
        data = row["data"]
        nodes[row["path"]] = zk_data.Znode(
            None if data is None else base64.b64decode(data),
            int(row["version"]),
            tuple(row["children"] or ()),
        )
    return zk_data.ZkSnapshot(nodes)
