import subprocess
import sys
from pathlib import Path

import pytest

from pykraft.cli.main import build_parser, main


def test_parser_lists_subcommands() -> None:
    text = build_parser().format_help()
    for name in ("storage", "server", "metadata-quorum", "topics", "dev"):
        assert name in text


def test_development_harnesses_are_under_dev_and_keep_their_old_names() -> None:
    """Issue 45: operator commands apart from the development harnesses in the help; the
    old top-level names still parse (for one release) but are not listed."""
    parser = build_parser()
    listed = parser.format_help()
    for name in ("sim", "faults", "demo"):
        assert f"    {name} " not in listed, listed
    dev_help = parser.parse_args(["dev"])
    assert dev_help.func is not None
    new = parser.parse_args(["dev", "sim", "run", "--seed", "3"])
    old = parser.parse_args(["sim", "run", "--seed", "3"])
    assert new.func is not None and old.func is not None
    assert new.seed == old.seed == 3


def test_a_cluster_id_starting_with_a_dash_is_taken_as_the_value(tmp_path: Path) -> None:
    """ZooKeeper-mode Kafka generates cluster ids that may start with '-' (a migration copies
    one): ``storage format --cluster-id -...`` formats instead of reading it as an option."""
    cluster_id = "-" + "A" * 21
    config = tmp_path / "controller.properties"
    config.write_text(
        "process.roles=controller\nnode.id=1\n"
        "listeners=CONTROLLER://127.0.0.1:19093\ncontroller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters=1@127.0.0.1:19093\nmetadata.log.dir={tmp_path / 'data'}\n"
    )
    code = main(["storage", "format", "--config", str(config), "--cluster-id", cluster_id])
    assert code == 0
    meta = (tmp_path / "data" / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}" in meta


def test_the_program_leaves_hypothesis_out(tmp_path: Path) -> None:
    """kio registers Hypothesis strategies for its types when it can import Hypothesis (a dev
    dependency): the ``pykraft`` program keeps it out (``cli.main._without_test_strategies``),
    while it still imports kio."""
    config = tmp_path / "bad.properties"
    config.write_text("node.id=1\nprocess.roles=controller\n")  # refused after the imports
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "pykraft.cli.main",
            "server",
            "start",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "listeners" in result.stderr, result.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert "kio.static.primitive" in imported
    assert "hypothesis" not in imported


def test_server_start_refuses_the_broker_role(tmp_path: Path) -> None:
    """Kafka's combined mode (process.roles=broker,controller) and a broker alone are refused
    with one line: pykraft is a controller only (issue 46: it started and ran no broker)."""
    for roles in ("broker,controller", "broker"):
        config = tmp_path / "combined.properties"
        config.write_text(
            f"process.roles={roles}\nnode.id=1\n"
            "listeners=CONTROLLER://127.0.0.1:19093,PLAINTEXT://127.0.0.1:19092\n"
            "controller.listener.names=CONTROLLER\n"
            f"controller.quorum.voters=1@127.0.0.1:19093\nmetadata.log.dir={tmp_path / 'data'}\n"
        )
        result = subprocess.run(
            [sys.executable, "-m", "pykraft.cli.main", "server", "start", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "process.roles must be controller" in lines[0], lines
        assert f"process.roles={roles}" in lines[0]


ADMIN_COMMANDS = (
    ("topics", "--list"),
    ("cluster", "describe"),
    ("reassign", "--list"),
    ("features", "describe"),
    ("metadata-quorum", "describe", "--status"),
)


def test_every_admin_command_takes_kafkas_bootstrap_options() -> None:
    """As Kafka's tools: --bootstrap-server or --bootstrap-controller, --command-config and
    --timeout-ms, on every admin command; one builder turns them into the client."""
    from pykraft.cli._common import admin_client

    parser = build_parser()
    for command in ADMIN_COMMANDS:
        for option in ("--bootstrap-server", "--bootstrap-controller"):
            group, rest = command[0], list(command[1:])
            args = parser.parse_args(
                [group, option, "h:1", "--command-config", "/dev/null", "--timeout-ms", "7", *rest]
                if group in ("topics", "reassign", "metadata-quorum", "features")
                else [group, *rest, option, "h:1", "--timeout-ms", "7"]
            )
            client = admin_client(args)
            assert client.bootstrap == [("h", 1)]
            assert client.bootstrap_controllers == (option == "--bootstrap-controller")
            assert client.timeout_ms == 7


def test_an_admin_command_needs_exactly_one_bootstrap_option(capsys: object) -> None:
    both = ["--bootstrap-server", "h:1", "--bootstrap-controller", "h:2"]
    cases = [
        ["topics", "--list"],
        ["topics", *both, "--list"],
        ["cluster", "describe"],
        ["cluster", "describe", *both],
        ["reassign", "--list"],
        ["reassign", *both, "--list"],
        ["features", "describe"],
        ["features", *both, "describe"],
        ["features", "describe", *both],
        ["features", "--bootstrap-server", "h:1", "describe", "--bootstrap-controller", "h:2"],
        ["metadata-quorum", "describe", "--status"],
        ["metadata-quorum", *both, "describe", "--status"],
    ]
    for argv in cases:
        assert main(argv) == 1, argv
    lines = capsys.readouterr().err.splitlines()  # type: ignore[attr-defined]
    assert lines == [
        "pykraft: give exactly one of --bootstrap-server and --bootstrap-controller"
    ] * len(cases)


def test_features_takes_the_bootstrap_option_after_its_command() -> None:
    from pykraft.cli._common import admin_client

    args = build_parser().parse_args(["features", "describe", "--bootstrap-server", "b:9"])
    assert admin_client(args).bootstrap == [("b", 9)]


def test_roll_says_what_its_options_take(capsys: pytest.CaptureFixture[str]) -> None:
    """``pykraft roll``'s lists refused with what they take, before anything is asked."""
    common = ["roll", "--bootstrap-controller", "h:1", "--restart-command", "true"]
    assert main([*common, "--controllers", "1=nohost"]) == 1
    assert main([*common, "--controllers", "1=h:9101", "--brokers", "a,b"]) == 1
    err = capsys.readouterr().err
    assert "--controllers takes ID=HOST:PORT entries, not '1=nohost'" in err, err
    assert "--brokers takes broker ids" in err, err
