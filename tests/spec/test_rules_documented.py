"""docs/TLA-PROPERTIES.md's table of trace rules stays true: every rule the trace checker can
raise (``pykraft.spec``) has a row, and every row names a rule it raises."""

from __future__ import annotations

import re
from pathlib import Path

import pykraft.spec

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "TLA-PROPERTIES.md"


def test_the_table_lists_exactly_the_rules_raised() -> None:
    source = "\n".join(p.read_text() for p in Path(pykraft.spec.__file__).parent.glob("*.py"))
    raised = set(re.findall(r'fail\(\s*"([a-z-]+)"', source))
    documented = set(re.findall(r"^\| `spec:([a-z-]+)` \|", DOC.read_text(), re.M))
    assert len(raised) >= 20, raised
    assert raised == documented, (raised - documented, documented - raised)
