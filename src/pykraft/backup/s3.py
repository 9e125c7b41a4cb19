"""A metadata backup mirrored to an S3-compatible bucket (``pykraft metadata backup --s3``),
and brought back from it (``pykraft metadata restore s3://...``).

Theory of operation. The backup directory (``take.py``) stays the working copy: each round
writes it first, then ``mirror`` makes the bucket's objects under the prefix the same files,
one object per file (``<prefix>/meta.properties``, ``<prefix>/__cluster_metadata-0/...``): a
file is uploaded when its size or modification time differ from what the last mirror
uploaded (kept in ``s3-mirror.json`` beside the files, which is not uploaded), and an object
whose file is gone (a segment a cut-back removed) is deleted. Snapshots never change once
written and segments only grow (or are cut back), so a round uploads the new snapshots and the
segments that grew. Objects are uploaded data first and ``backup.json`` last, so a bucket read
mid-mirror is a backup whose end is a little behind: segments are read for their valid
prefix, as always. ``download`` copies every object under the prefix into a directory, which
``restore`` and ``pykraft pipeline`` read as any backup.

The client is boto3's: credentials come from its usual chain (``AWS_ACCESS_KEY_ID``, the
shared files, an instance role), the endpoint from ``--s3-endpoint-url`` or
``AWS_ENDPOINT_URL``. Tested against SeaweedFS (``scripts/seaweedfs.sh``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pykraft.backup.take import BACKUP_MANIFEST, BackupError
from pykraft.storage._files import atomic_write

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["MIRROR_STATE", "MirrorReport", "S3Location", "download", "mirror", "s3_client"]

MIRROR_STATE: Final = "s3-mirror.json"
_SKIPPED_SUFFIXES: Final = (".tmp", ".part")


@dataclass(frozen=True)
class S3Location:
    """``s3://bucket/prefix``."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        if not url.startswith("s3://"):
            raise BackupError(f"{url}: not an s3://bucket/prefix URL")
        bucket, _, prefix = url[len("s3://") :].partition("/")
        if not bucket:
            raise BackupError(f"{url}: no bucket")
        return cls(bucket, prefix.strip("/"))

    def key(self, relative: str) -> str:
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


@dataclass
class MirrorReport:
    uploaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


def s3_client(endpoint_url: str | None) -> Any:
    """boto3's S3 client (imported here: only a backup with --s3 needs it)."""
    import boto3

    return boto3.client("s3", endpoint_url=endpoint_url)


def _files(local: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(local.rglob("*")):
        if (
            path.is_file()
            and path.name != MIRROR_STATE
            and not path.name.endswith(_SKIPPED_SUFFIXES)
        ):
            yield path.relative_to(local).as_posix(), path


def _remote_keys(client: Any, where: S3Location) -> set[str]:
    keys: set[str] = set()
    prefix = where.key("")
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=where.bucket, Prefix=prefix
    ):
        keys.update(item["Key"] for item in page.get("Contents", ()))
    return keys


def mirror(local: Path, where: S3Location, client: Any) -> MirrorReport:
    """Make the objects under ``where`` the files of the backup directory ``local``."""
    state_path = local / MIRROR_STATE
    try:
        state: dict[str, list[int]] = json.loads(state_path.read_text())
    except (FileNotFoundError, ValueError):
        state = {}
    files = dict(_files(local))
    report = MirrorReport()
    ordered = sorted(files, key=lambda name: (name == BACKUP_MANIFEST, name))
    for relative in ordered:
        stat = files[relative].stat()
        stamp = [stat.st_size, stat.st_mtime_ns]
        if state.get(relative) == stamp:
            continue
        client.upload_file(str(files[relative]), where.bucket, where.key(relative))
        state[relative] = stamp
        report.uploaded.append(relative)
    wanted = {where.key(relative) for relative in files}
    for key in sorted(_remote_keys(client, where) - wanted):
        client.delete_object(Bucket=where.bucket, Key=key)
        report.deleted.append(key)
    state = {name: stamp for name, stamp in state.items() if name in files}
    atomic_write(state_path, json.dumps(state, sort_keys=True).encode())
    return report


def download(where: S3Location, client: Any, target: Path) -> int:
    """Copy every object under ``where`` into ``target`` (created); the number of files."""
    prefix = where.key("")
    count = 0
    for key in sorted(_remote_keys(client, where)):
        relative = key[len(prefix) :]
        if not relative or relative.endswith("/") or ".." in Path(relative).parts:
            continue
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(where.bucket, key, str(path))
        count += 1
    if count == 0:
        raise BackupError(f"{where}: no backup there (no object under the prefix)")
    return count
