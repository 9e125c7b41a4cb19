"""``docs/TLA-PROPERTIES.md`` stays true: every check it names in its "pykraft's check"
column (a backticked kebab-case name) is raised by the simulator's code, and every safety
and liveness property of the KRaft specifications it maps has a row."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "TLA-PROPERTIES.md"
SIM = ROOT / "src" / "pykraft" / "sim"

# The properties of kraft_kip_853_properties.tla, kraft_kip_996_properties.tla (Pre-Vote adds
# NotStuckInProspective) and kip_966_properties.tla that the table must map.
PROPERTIES = {
    "NoIllegalState",
    "NoLogDivergence",
    "StatesMatchRoles",
    "NeverTwoLeadersInSameEpoch",
    "LeaderHasAllAckedValues",
    "AckedValueNotLost",
    "ValidVotesRecv",
    "EventuallyLeaderElected",
    "ValuesEventuallyAcked",
    "ReconfigurationNotStuck",
    "NotStuckInProspective",
    "ValidControllerIsrAndElr",
    "LeaderCompletenessProperty",
    "LeaderCandidateCompletenessProperty",
    "MetadataLogMatchingProperty",
    "ValidControllerState",
    "EventuallyReassignmentCompletes",
    "LogMatchingProperty",
}


def _rows() -> list[list[str]]:
    rows = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[0] != "property":
            rows.append(cells)
    return rows


def test_every_property_has_a_row() -> None:
    named = {p.strip() for row in _rows() for p in row[0].split(",")}
    named = {re.sub(r"\s*\(.*\)", "", p) for p in named}
    assert named >= PROPERTIES, PROPERTIES - named


def test_every_check_named_is_raised_by_the_simulator() -> None:
    source = "\n".join(p.read_text() for p in SIM.glob("*.py"))
    checks = {name for row in _rows() for name in re.findall(r"`([a-z]+(?:-[a-z]+)+)`", row[2])}
    assert len(checks) >= 20, checks
    missing = sorted(c for c in checks if f'"{c}"' not in source)
    assert not missing, missing
