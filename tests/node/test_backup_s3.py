"""The metadata backup's S3-compatible target against a real object store, SeaweedFS
(Apache-2.0, built from its Go module by ``scripts/seaweedfs.sh``; ``scripts/test.sh`` builds
it before the process suites): ``pykraft metadata backup --s3`` mirrors the backup directory
to a bucket, round after round (new snapshots and grown segments uploaded, a segment a cut-back
removed deleted), and ``pykraft metadata restore s3://...`` restores from the bucket exactly
what it restores from the directory."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from pykraft.backup.s3 import S3Location
from pykraft.storage.log import PARTITION_DIR_NAME, FileLog

from ..storage.test_backup import _batch, _metadata_log
from .procs import cli, free_ports, wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "pykraft",
    "AWS_SECRET_ACCESS_KEY": "pykraft-test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _weed() -> str:
    found = subprocess.run(
        [str(ROOT / "scripts" / "seaweedfs.sh"), "path"], capture_output=True, text=True
    ).stdout.strip()
    assert found, "SeaweedFS is not built: run scripts/seaweedfs.sh build"
    return found


@pytest.fixture
def s3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A SeaweedFS server (master, volume, filer and S3 gateway) on free ports; its S3
    endpoint, with a bucket ``metadata``."""
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    ports = free_ports(10)
    names = ("master", "volume", "filer", "s3")
    argv = [_weed(), "server", f"-dir={tmp_path / 'weed'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1"]
    argv += ["-filer", "-s3", f"-s3.port.iceberg={ports[8]}", f"-s3.port.lance={ports[9]}"]
    for i, name in enumerate(names):
        argv += [f"-{name}.port={ports[i]}", f"-{name}.port.grpc={ports[4 + i]}"]
    (tmp_path / "weed").mkdir()
    log = (tmp_path / "weed.log").open("wb")
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    endpoint = f"http://127.0.0.1:{ports[3]}"
    client = boto3.client("s3", endpoint_url=endpoint)

    def bucket_made() -> bool:
        try:
            client.create_bucket(Bucket="metadata")
        except Exception:
            return False
        return True

    try:
        # Its master, volume server, filer and gateway start one after another: allow a busy
        # machine a minute.
        wait_for(bucket_made, "SeaweedFS's S3 gateway to create a bucket", timeout_s=60)
        yield endpoint
    finally:
        server.kill()
        server.wait(timeout=30)
        log.close()


def _objects(endpoint: str) -> dict[str, bytes]:
    client = boto3.client("s3", endpoint_url=endpoint)
    listed = client.list_objects_v2(Bucket="metadata", Prefix="cluster-a/").get("Contents", [])
    return {
        o["Key"]: client.get_object(Bucket="metadata", Key=o["Key"])["Body"].read() for o in listed
    }


def _files(local: Path) -> dict[str, bytes]:
    return {
        f"cluster-a/{p.relative_to(local).as_posix()}": p.read_bytes()
        for p in local.rglob("*")
        if p.is_file() and p.name != "s3-mirror.json"
    }


def test_a_backup_mirrored_to_s3_restores_as_the_directory_does(s3: str, tmp_path: Path) -> None:
    source, _ = _metadata_log(tmp_path)  # also backed up once into tmp_path / "backup"
    local = tmp_path / "mirrored"
    url = "s3://metadata/cluster-a"
    # One batch per backup segment (100 bytes): a cut-back removes whole segment files.
    args = ["--to", str(local), "--segment-bytes", "100", "--s3", url, "--s3-endpoint-url", s3]
    first = cli("metadata", "backup", str(source), *args)
    assert first.returncode == 0, first.stderr
    assert "mirrored to s3://metadata/cluster-a" in first.stdout
    assert _objects(s3) == _files(local)  # every file, byte for byte

    log = FileLog.open(source / PARTITION_DIR_NAME, segment_bytes=62)
    _batch(log, 5, b"more")
    log.close(clean=True)
    second = cli("metadata", "backup", str(source), *args)
    assert second.returncode == 0, second.stderr
    # The backup's new segment and backup.json; nothing else changed.
    assert "2 files uploaded, 0 objects deleted" in second.stdout, second.stdout
    assert _objects(s3) == _files(local)

    # The source's tail rewritten (a deposed leader's): the backup cuts its segments back and
    # the bucket loses the objects of the segments that went.
    log = FileLog.open(source / PARTITION_DIR_NAME, segment_bytes=62)
    log.truncate_to(9)
    _batch(log, 6, b"rewritten")
    log.close(clean=True)
    third = cli("metadata", "backup", str(source), *args)
    assert third.returncode == 0 and "cut back to 9" in third.stdout, third.stdout
    assert "1 objects deleted" in third.stdout, third.stdout
    objects = _objects(s3)
    assert objects == _files(local)
    assert "cluster-a/__cluster_metadata-0/00000000000000000011.log" not in objects

    kept = tmp_path / "downloaded"
    from_s3 = cli(
        "metadata", "restore", url, "--s3-endpoint-url", s3, "--dry-run", "--json",
        "--download-to", str(kept),
    )  # fmt: skip
    from_dir = cli("metadata", "restore", str(local), "--dry-run", "--json")
    assert from_s3.returncode == 0 and from_dir.returncode == 0, from_s3.stderr
    plan_s3, plan_dir = json.loads(from_s3.stdout), json.loads(from_dir.stdout)
    assert plan_s3.pop("backup") == str(kept) and plan_dir.pop("backup") == str(local)
    assert plan_s3 == plan_dir and plan_s3["backup_end"] == 10
    missing = cli(
        "metadata", "restore", "s3://metadata/nothing", "--s3-endpoint-url", s3, "--dry-run"
    )
    assert missing.returncode == 1 and "no backup there" in missing.stderr
    assert S3Location.parse(url) == S3Location("metadata", "cluster-a")
