from __future__ import annotations

from pathlib import Path

import pytest

from pykraft.cli.main import main
from pykraft.raft.types import OffsetAndEpoch
from pykraft.storage import FileSnapshotStore, read_meta_properties, read_snapshot, uuid_to_kafka


def write_config(tmp_path: Path, node_id: int = 1) -> Path:
    config = tmp_path / "server.properties"
    config.write_text(
        "# test\n"
        f"node.id={node_id}\nprocess.roles=controller\n"
        f"metadata.log.dir={tmp_path / 'meta'}\n"
        "listeners=CONTROLLER://localhost:9093\ncontroller.listener.names=CONTROLLER\n"
    )
    return config


def cluster_id(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["storage", "random-uuid"]) == 0
    value = capsys.readouterr().out.strip()
    assert len(value) == 22
    return value


def test_format_standalone_info_and_refuse_reformat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    cid = cluster_id(capsys)
    assert (
        main(["storage", "format", "--config", str(config), "--cluster-id", cid, "--standalone"])
        == 0
    )
    meta = read_meta_properties(tmp_path / "meta")
    assert meta is not None and meta.cluster_id == cid and meta.node_id == 1
    store = FileSnapshotStore.open(tmp_path / "meta" / "__cluster_metadata-0")
    contents = read_snapshot(store, OffsetAndEpoch(0, 0))
    assert contents.kraft_version == 1
    assert contents.voters is not None
    assert [(v.voter_id, v.directory_id) for v in contents.voters] == [(1, meta.directory_id)]
    capsys.readouterr()
    assert main(["storage", "format", "-c", str(config), "-t", cid, "--standalone"]) == 1
    assert "already formatted" in capsys.readouterr().err
    assert (
        main(["storage", "format", "-c", str(config), "-t", cid, "-s", "--ignore-formatted"]) == 0
    )
    assert main(["storage", "info", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert cid in out and "kraft.version=1" in out


def test_format_initial_controllers_uses_listed_directory_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, node_id=2)
    cid = cluster_id(capsys)
    d1, d2 = cluster_id(capsys), cluster_id(capsys)
    controllers = f"1@h1:9093:{d1},2@h2:9093:{d2}"
    argv = ["storage", "format", "-c", str(config), "-t", cid, "--initial-controllers", controllers]
    assert main(argv) == 0
    meta = read_meta_properties(tmp_path / "meta")
    assert meta is not None and uuid_to_kafka(meta.directory_id) == d2
    store = FileSnapshotStore.open(tmp_path / "meta" / "__cluster_metadata-0")
    voters = read_snapshot(store, OffsetAndEpoch(0, 0)).voters
    assert voters is not None and [v.voter_id for v in voters] == [1, 2]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--initial-controllers", "1@h1:x:abc"], "initial-controllers"),
        (["--standalone", "--feature", "kraft.version=0"], "kraft.version"),
        (["--standalone", "--feature", "metadata.version=3"], "metadata.version"),
    ],
)
def test_format_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    config = write_config(tmp_path)
    cid = cluster_id(capsys)
    assert main(["storage", "format", "-c", str(config), "-t", cid, *extra]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "meta" / "meta.properties").exists()


def test_missing_node_id_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.properties"
    config.write_text(f"metadata.log.dir={tmp_path}\n")
    assert main(["storage", "info", "-c", str(config)]) == 1
    assert "node.id" in capsys.readouterr().err


def test_demo_runs_twice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    assert "formatted" in capsys.readouterr().out
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "reusing" in out and "epochs [(1, 0), (2, 501)]" in out and "LEADER_CHANGE" in out


def _controller_config(tmp_path: Path, *, static: bool) -> Path:
    path = tmp_path / "c.properties"
    voters = "controller.quorum.voters=1@127.0.0.1:9093\n" if static else ""
    path.write_text(
        "node.id=1\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.1:9093\n"
        f"controller.listener.names=CONTROLLER\nmetadata.log.dir={tmp_path / 'd'}\n" + voters
    )
    return path


def test_format_follows_kafkas_mode_rules(tmp_path: Path) -> None:
    """As Kafka 4.3's kafka-storage (messages word for word, docs/DECISIONS.md)."""
    import subprocess
    import sys

    def fmt(config: Path, *flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "pykraft.cli.main",
                "storage",
                "format",
                "--config",
                str(config),
                "--cluster-id",
                "X5SvYNT7TJu0jYq2_o3_vg",
                *flags,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )

    dynamic = _controller_config(tmp_path, static=False)
    refused = fmt(dynamic)
    assert refused.returncode == 1
    assert (
        "Because controller.quorum.voters is not set on this controller, you must specify one of the following: --standalone, --initial-controllers, or --no-initial-controllers."
        in refused.stderr
    )
    static = _controller_config(tmp_path, static=True)
    refused = fmt(static, "--standalone")
    assert refused.returncode == 1
    assert (
        "You cannot specify controller.quorum.voters and format the node with --initial-controllers or --standalone."
        in refused.stderr
    )
    refused = fmt(static, "--feature", "kraft.version=1")
    assert refused.returncode == 1 and "Cannot set kraft.version to 1 unless" in refused.stderr
    refused = fmt(static, "--release-version", "2.8")
    assert refused.returncode == 1 and "unknown release version '2.8'" in refused.stderr
    # The levels format starts a cluster at are the ones UpdateFeatures accepts (issue 28):
    # A level Kafka does not define (4.5-IV0 is 4.4.0's unstable placeholder).
    for too_new in (("--release-version", "4.5"), ("--feature", "metadata.version=34")):
        refused = fmt(static, *too_new)
        assert refused.returncode == 1, refused
        assert "3.3-IV3" in refused.stderr and "4.4-IV2" in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    # A feature level needs what it depends on, in one line.
    refused = fmt(
        static, "--release-version", "3.9", "--feature", "eligible.leader.replicas.version=1"
    )
    assert refused.returncode == 1 and "depends on metadata.version level 23" in refused.stderr

    done = fmt(static, "--release-version", "3.9")  # static voters: no mode flag needed
    assert done.returncode == 0, done.stderr
    from pykraft.storage.bootstrap import read_bootstrap_metadata

    assert read_bootstrap_metadata(tmp_path / "d") == {"metadata.version": 21}


def test_format_default_bootstrap_metadata(tmp_path: Path) -> None:
    from pykraft.node.config import load_config
    from pykraft.storage import format_storage
    from pykraft.storage.bootstrap import read_bootstrap_metadata

    config = load_config(_controller_config(tmp_path, static=True))
    # Kafka 4.4.0's kafka-storage default, 4.4-IV2, and the release's default features unless
    # given (KAFKA-4.4-CONTRACT 2.3): 0 turns one off.
    format_storage(config, "X5SvYNT7TJu0jYq2_o3_vg", features={"transaction.version": 0})
    assert read_bootstrap_metadata(tmp_path / "d") == {
        "metadata.version": 33,
        "eligible.leader.replicas.version": 1,
        "group.version": 1,
        "share.version": 2,
        "streams.version": 1,
    }
