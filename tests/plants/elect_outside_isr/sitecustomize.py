"""Planted bug (tests/plants/README.md): a controller that, when an AlterPartition shrinks an
ISR, makes a replica the shrink removed the leader (if it is registered and unfenced), with
no recovery state -- an unclean election in disguise. The fault runs' checker must catch it."""

from __future__ import annotations

import dataclasses

from pykraft.controller import leadership
from pykraft.controller.partitions import active

_alter_one = leadership._alter_one


def _elect_outside_isr(*args, **kwargs):  # type: ignore[no-untyped-def]
    image, _broker_id, _version, topic_id, part = args[:5]
    outcome = _alter_one(*args, **kwargs)
    if isinstance(outcome, leadership.ApiError) or outcome[0] is None:
        return outcome
    record = outcome[0]
    p = image.partition(topic_id, int(part.partition_index))
    if record.isr is None:
        return outcome
    removed = [b for b in p.isr if b not in record.isr and active(image, b)]
    if not removed:
        return outcome
    record = dataclasses.replace(record, leader=removed[0])
    return record, leadership._after(p, record)


leadership._alter_one = _elect_outside_isr
