"""Planted bug (tests/plants/README.md): KIP-435's batches ignore
``reassignment.parallel.partition.count``: every moving partition's next step starts at once."""

from __future__ import annotations

import dataclasses

from pykraft.controller import reassign
from pykraft.controller.steps import INT_MAX

_plan = reassign.plan_batch


def _unbounded(candidates, in_flight, limits):  # type: ignore[no-untyped-def]
    return _plan(candidates, in_flight, dataclasses.replace(limits, partitions=INT_MAX))


reassign.plan_batch = _unbounded
