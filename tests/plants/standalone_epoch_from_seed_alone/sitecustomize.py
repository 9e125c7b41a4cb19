"""Planted bug (tests/plants/README.md): force-standalone picks the new epoch from the seed's
directory alone, not above every epoch the surveyed survivors knew."""

from __future__ import annotations

from pykraft.storage import recovery

_plan = recovery.plan_rewrite


def _seed_only(survey, voters, backup, operation, survivors=()):  # type: ignore[no-untyped-def]
    return _plan(survey, voters, backup, operation, ())


recovery.plan_rewrite = _seed_only
