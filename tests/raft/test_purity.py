"""The deterministic cores do no I/O (STYLE rule 1, SPEC A2): walk the AST of every module in
``pykraft/raft``, ``pykraft/controller`` and ``pykraft/metadata`` (the image and its records)
and refuse imports of anything that touches the
OS, clocks or randomness (time and randomness come in as inputs)."""

from __future__ import annotations

import ast
from pathlib import Path

import pykraft.controller
import pykraft.metadata
import pykraft.raft

FORBIDDEN = {
    "asyncio",
    "socket",
    "selectors",
    "ssl",
    "time",
    "datetime",
    "random",
    "secrets",
    "os",
    "sys",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "threading",
    "multiprocessing",
    "concurrent",
    "subprocess",
    "signal",
    "logging",
    "mmap",
    "fcntl",
    "uvloop",
    "http",
    "urllib",
    "select",
    "glob",
    "builtins",
}
FORBIDDEN_CALLS = {"open", "print", "input", "exec", "eval", "__import__"}
RAFT_DIR = Path(pykraft.raft.__file__).parent
CONTROLLER_DIR = Path(pykraft.controller.__file__).parent
METADATA_DIR = Path(pykraft.metadata.__file__).parent


def offences(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_CALLS:
                found.append(f"line {node.lineno}: calls {node.func.id}()")
            continue
        else:
            continue
        for name in names:
            if name.split(".")[0] in FORBIDDEN:
                found.append(f"line {node.lineno}: imports {name}")
    return found


def test_raft_modules_do_no_io() -> None:
    modules = sorted(RAFT_DIR.rglob("*.py"))
    assert len(modules) >= 8
    problems = {
        str(path.relative_to(RAFT_DIR)): bad
        for path in modules
        if (bad := offences(path.read_text()))
    }
    assert not problems, problems


def test_controller_modules_do_no_io() -> None:
    modules = sorted(CONTROLLER_DIR.rglob("*.py"))
    assert len(modules) >= 8
    problems = {
        str(path.relative_to(CONTROLLER_DIR)): bad
        for path in modules
        if (bad := offences(path.read_text()))
    }
    assert not problems, problems


def test_metadata_modules_do_no_io() -> None:
    modules = sorted(METADATA_DIR.rglob("*.py"))
    assert any(p.name == "image.py" for p in modules)
    problems = {
        str(path.relative_to(METADATA_DIR)): bad
        for path in modules
        if (bad := offences(path.read_text()))
    }
    assert not problems, problems


def test_checker_catches_offences() -> None:
    assert offences("import time\nfrom os import path\nimport random as r\n") == [
        "line 1: imports time",
        "line 2: imports os",
        "line 3: imports random",
    ]
    assert offences("open('x')\n") == ["line 1: calls open()"]
    assert offences("from . import roles\nimport dataclasses\n") == []
