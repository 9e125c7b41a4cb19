"""Runs every scenario script in ``testdata/`` (etcd datadriven style).

A script is a sequence of blocks::

    # comments
    command args
    ----
    expected output lines
    <blank line>

Set PYKRAFT_REWRITE=1 to regenerate the expected outputs (then review the diff: expectations
are claims about the KIPs, checked by reading, not by recording).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .commands import run
from .harness import Cluster

TESTDATA = Path(__file__).parent / "testdata"
SCRIPTS = sorted(TESTDATA.glob("*.txt"))


def parse(text: str) -> list[tuple[list[str], str, list[str]]]:
    """Blocks of (leading comment lines, command, expected output lines)."""
    blocks: list[tuple[list[str], str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        comments: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("#")):
            comments.append(lines[i])
            i += 1
        if i >= len(lines):
            if comments:
                blocks.append((comments, "", []))
            break
        command = lines[i]
        i += 1
        assert i < len(lines) and lines[i] == "----", f"missing ---- after {command!r}"
        i += 1
        expected: list[str] = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        blocks.append((comments, command, expected))
    return blocks


def render(blocks: list[tuple[list[str], str, list[str]]]) -> str:
    out: list[str] = []
    for comments, command, expected in blocks:
        if out:
            out.append("")
        out.extend(c for c in comments if c.strip())
        if command:
            out.extend([command, "----", *expected])
    return "\n".join(out).rstrip("\n") + "\n"


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_scenario(script: Path) -> None:
    blocks = parse(script.read_text())
    cluster: Cluster | None = None
    rewritten = []
    failures = []
    for comments, command, expected in blocks:
        if not command:
            rewritten.append((comments, command, expected))
            continue
        cluster, actual = run(cluster, command)
        rewritten.append((comments, command, actual))
        if actual != expected:
            failures.append(
                f"{script.name}: {command}\n--- expected\n"
                + "\n".join(expected)
                + "\n--- actual\n"
                + "\n".join(actual)
            )
    if os.environ.get("PYKRAFT_REWRITE") == "1":
        script.write_text(render(rewritten))
        return
    assert not failures, "\n\n".join(failures)
