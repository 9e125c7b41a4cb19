"""docs/ARCHITECTURE.md's layering, checked: which package of ``pykraft`` may import which.
Every import counts (module level, inside functions, under ``TYPE_CHECKING``), read from the
AST of every module. Beside it, ``tests/raft/test_purity.py`` keeps the deterministic cores
free of I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pykraft

ROOT = Path(pykraft.__file__).parent

# package -> the pykraft packages it may import (besides itself). Lower layers first.
ALLOWED: dict[str, set[str]] = {
    "schema": set(),
    "native": set(),
    "ops": set(),  # the dashboard and alert rules: data over metric names, imports nothing  # names the modules it compiles; imports none of them
    "spec": set(),  # the trace checker: rules over steps as JSON-ready data, imports nothing
    "protocol": {"schema"},
    "records": {"schema"},
    "metadata": {"schema"},
    "raft": {"records"},
    "storage": {"raft", "records", "metadata", "schema"},
    "controller": {"raft", "records", "metadata", "protocol", "schema"},
    "net": {"protocol", "raft", "records", "schema"},
    "migration": {"controller", "metadata", "protocol", "records", "schema", "storage"},
    "backup": {"controller", "metadata", "raft", "records", "schema", "storage"},
    "admin": {"net", "protocol", "raft", "records", "schema"},
    "sim": {"controller", "metadata", "protocol", "raft", "records", "schema", "spec", "storage"},
    "node": {
        "admin",  # the health endpoint asks the quorum (DescribeQuorum) through the client
        "controller",
        "metadata",
        "migration",
        "native",
        "net",
        "protocol",
        "raft",
        "records",
        "schema",
        "storage",
    },
    "pipeline": {
        "controller",
        "metadata",
        "migration",
        "protocol",
        "raft",
        "records",
        "schema",
        "sim",
        "storage",
    },
    "interop": {
        "admin",
        "controller",
        "metadata",
        "migration",
        "net",
        "node",
        "protocol",
        "raft",
        "records",
        "schema",
        "storage",
    },
    "faults": {
        "admin",
        "interop",
        "metadata",
        "net",
        "node",
        "protocol",
        "raft",
        "records",
        "schema",
        "spec",
        "storage",
    },
    "cli": set(),  # the top: anything (checked below as "every package")
}
TOP = {"cli", "__main__", "_version"}


def imported_packages(path: Path) -> set[str]:
    """The pykraft packages ``path`` imports."""
    package = path.relative_to(ROOT).parts[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside its own package unless it climbs out
                names = [f"pykraft.{package}"] if node.level == 1 else ["pykraft"]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "pykraft" and len(parts) > 1:
                found.add(parts[1])
    found.discard(package)
    return found


def offences() -> dict[str, set[str]]:
    bad: dict[str, set[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if len(rel.parts) == 1:
            continue  # pykraft/__init__.py, __main__.py
        package = rel.parts[0]
        if package in TOP:
            continue
        assert package in ALLOWED, f"{package}/ is not in the layering table: add it"
        wrong = imported_packages(path) - ALLOWED[package]
        if wrong:
            bad[str(rel)] = wrong
    return bad


def test_every_import_follows_the_layering() -> None:
    assert offences() == {}


def test_the_check_sees_a_break(tmp_path: Path) -> None:
    fake = ROOT / "records" / "_layering_probe.py"
    fake.write_text("def f() -> None:\n    from pykraft.raft.core import RaftCore\n")
    try:
        assert offences() == {"records/_layering_probe.py": {"raft"}}
    finally:
        fake.unlink()


# Module grain: the raft modules a controller module may import. The controller reads the
# core only through ``raft/api.RaftApi`` (with the core's plain types and its NotLeaderError),
# never its roles, state or rule modules (docs/ARCHITECTURE.md).
CONTROLLER_RAFT_MODULES = {"pykraft.raft.api", "pykraft.raft.config", "pykraft.raft.types"}


def imported_modules(path: Path) -> set[str]:
    """The absolute modules ``path`` imports from (``from X import y`` gives X)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found


def controller_reaches_into_raft() -> dict[str, set[str]]:
    bad: dict[str, set[str]] = {}
    for path in sorted((ROOT / "controller").rglob("*.py")):
        raft = {
            m
            for m in imported_modules(path)
            if m == "pykraft.raft" or m.startswith("pykraft.raft.")
        }
        if raft - CONTROLLER_RAFT_MODULES:
            bad[str(path.relative_to(ROOT))] = raft - CONTROLLER_RAFT_MODULES
    return bad


def test_the_controller_uses_the_core_only_through_raft_api() -> None:
    assert controller_reaches_into_raft() == {}


def test_the_module_check_sees_a_reach(tmp_path: Path) -> None:
    fake = ROOT / "controller" / "_layering_probe.py"
    fake.write_text("from pykraft.raft.roles import Leader\n")
    try:
        assert controller_reaches_into_raft() == {
            "controller/_layering_probe.py": {"pykraft.raft.roles"}
        }
    finally:
        fake.unlink()


def test_the_table_is_acyclic() -> None:
    """A package's allowed imports never lead back to it."""
    for start in ALLOWED:
        seen: set[str] = set()
        todo = list(ALLOWED[start])
        while todo:
            current = todo.pop()
            assert current != start, f"{start} can reach itself"
            if current not in seen:
                seen.add(current)
                todo.extend(ALLOWED.get(current, ()))


# Module grain inside the deterministic cores. raft/'s modules stand on floors: a module
# imports (at run time) only modules of its own floor or below. The rule modules see the core
# through ``raft/context.CoreContext`` and never import ``raft/core`` (``raft/api`` names it
# under TYPE_CHECKING only, to have mypy check that RaftCore is a RaftApi).
RAFT_FLOORS: tuple[frozenset[str], ...] = (
    # vocabulary: plain types, messages, the protocols the core is seen through
    frozenset({"api", "config", "context", "messages", "quorum", "requests", "types", "voters"}),
    # state objects, each owning one concern
    frozenset({"control", "interfaces", "progress", "roles", "snapshots", "state"}),
    # rules: functions of a CoreContext, one concern each
    frozenset(
        {
            "admin",
            "describe",
            "dispatch",
            "elections",
            "invariants",
            "joining",
            "kraft_version",
            "membership",
            "outputs",
            "reassignment",
            "replication",
            "spec_steps",  # sees the core through RaftApi's hooks only
        }
    ),
    frozenset({"core"}),  # RaftCore: the one class that holds it all
)


def runtime_imports(path: Path, package: str) -> set[str]:
    """The sibling modules of ``pykraft.<package>`` that ``path`` imports when it runs
    (imports under ``if TYPE_CHECKING:`` left out)."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(inner) for inner in ast.walk(node))
    prefix = f"pykraft.{package}"
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only or not isinstance(node, ast.ImportFrom):
            continue
        if node.module == prefix:
            found.update(alias.name for alias in node.names)
        elif node.module and node.module.startswith(prefix + "."):
            found.add(node.module.split(".")[2])
    found.discard(path.stem)
    return found


def module_graph(package: str) -> dict[str, set[str]]:
    files = sorted((ROOT / package).glob("*.py"))
    names = {path.stem for path in files} - {"__init__"}
    return {
        path.stem: runtime_imports(path, package) & names for path in files if path.stem in names
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import path that comes back to where it started (one per module on a cycle)."""
    found: list[list[str]] = []
    for start in sorted(graph):
        todo: list[list[str]] = [[start]]
        seen: set[str] = set()
        while todo:
            path = todo.pop()
            for nxt in sorted(graph[path[-1]]):
                if nxt == start:
                    found.append([*path, start])
                elif nxt not in seen:
                    seen.add(nxt)
                    todo.append([*path, nxt])
    return found


def raft_floor_breaks(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    floor = {name: level for level, names in enumerate(RAFT_FLOORS) for name in names}
    missing = set(graph) - set(floor)
    assert not missing, f"raft modules without a floor in RAFT_FLOORS: {sorted(missing)}"
    return {
        name: {dep for dep in deps if floor[dep] > floor[name]}
        for name, deps in graph.items()
        if any(floor[dep] > floor[name] for dep in deps)
    }


def test_raft_modules_stand_on_floors() -> None:
    assert raft_floor_breaks(module_graph("raft")) == {}


def test_no_raft_module_but_api_names_the_core() -> None:
    named = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "raft").glob("*.py")
        if "pykraft.raft.core" in imported_modules(path)
    }
    assert named == {"raft/api.py"}


def test_the_deterministic_cores_have_no_import_cycle() -> None:
    for package in ("raft", "controller", "metadata"):
        assert cycles(module_graph(package)) == [], package


def test_only_the_log_listener_builds_on_the_quorum_controller() -> None:
    users = {
        path.stem
        for path in (ROOT / "controller").glob("*.py")
        if "pykraft.controller.quorum_controller" in imported_modules(path)
    }
    assert users == {"log_listener"}


def test_the_module_checks_see_a_break() -> None:
    graph = {"membership": {"kraft_version"}, "kraft_version": {"membership"}}
    assert cycles(graph) == [
        ["kraft_version", "membership", "kraft_version"],
        ["membership", "kraft_version", "membership"],
    ]
    assert raft_floor_breaks({**module_graph("raft"), "types": {"core"}}) == {"types": {"core"}}


# The node's helpers see the controller host through a narrow protocol of what they use
# (``EnvelopeSite``, ``MigrationSite``, ``SnapshotNode``, ``MigrationFigures``,
# ``AppendHost``, ``RouterHost``), never the whole ``ControllerHost`` or ``RaftNode``: not even under
# TYPE_CHECKING.
NARROW_NODE_MODULES = (
    "envelope",
    "migration_host",
    "zk_worker",
    "controller_metrics",
    "snapshot_emitter",
    "kraft_upgrade",
    "appender",
    "outbound",
)


def test_node_helpers_see_the_host_through_narrow_protocols() -> None:
    reaching = {
        name: sorted(
            imported_modules(ROOT / "node" / f"{name}.py")
            & {"pykraft.node.controller_host", "pykraft.node.driver"}
        )
        for name in NARROW_NODE_MODULES
    }
    assert {name: found for name, found in reaching.items() if found} == {}


# The simulator's plug-ins see the simulation through a protocol of what they use
# (``BrokerSite``, ``OperationsSite``, ``NemesisSite``, ``RecoverySite``; mypy checks that
# ``Simulation`` satisfies each where it builds them), never the whole ``Simulation``.
NARROW_SIM_MODULES = ("brokers", "operations", "nemesis", "recovery")


def test_simulator_plugins_see_the_simulation_through_narrow_protocols() -> None:
    reaching = {
        name: sorted(imported_modules(ROOT / "sim" / f"{name}.py") & {"pykraft.sim.simulator"})
        for name in NARROW_SIM_MODULES
    }
    assert {name: found for name, found in reaching.items() if found} == {}
