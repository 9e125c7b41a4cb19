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
