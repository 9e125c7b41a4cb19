"""Bad input never crashes the controller nor writes a record that fails replay: hypothesis
generates requests of every API the controller serves, at every version, and the controller
(with live brokers and topics) handles them one after another. Each answer must encode at
the request's version; every record written is replayed by a standby image, which must stay
equal to the active one and pass the image's invariants."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.controller.errors import ApiError
from pykraft.protocol.apis import request_schema, response_schema
from pykraft.protocol.build import make
from pykraft.protocol.codec import encode_response
from pykraft.protocol.controller_apis import CONTROLLER_API_VERSIONS

from .harness import Harness

CALLS = [
    (int(key), version)
    for key, (low, high) in CONTROLLER_API_VERSIONS.items()
    for version in range(low, high + 1)
]


@st.composite
def requests(draw: st.DrawFn) -> tuple[int, int, Any]:
    """A random request; half of those naming a broker name a live one with its epoch, so
    that they get past the epoch check into the handler's own validation."""
    key, version = draw(st.sampled_from(CALLS))
    request = draw(st.from_type(request_schema(key, version)))
    names = {f.name for f in dataclasses.fields(request)}
    if "broker_id" in names and draw(st.booleans()):
        broker = draw(st.sampled_from([0, 1, 2]))
        changes: dict[str, Any] = {"broker_id": broker}
        if "broker_epoch" in names:
            changes["broker_epoch"] = LIVE_EPOCHS[broker]
        request = dataclasses.replace(request, **changes)
    return key, version, request


def _cluster() -> Harness:
    h = Harness()
    for b in (0, 1, 2):
        assert h.live_broker(b, rack=f"r{b % 2}") == LIVE_EPOCHS[b]
    h.create_topic("t", partitions=3, rf=2)
    return h


LIVE_EPOCHS = {0: 3, 1: 5, 2: 7}  # the offsets the three registrations are written at


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(requests(), min_size=1, max_size=12))
def test_random_requests_never_crash_nor_corrupt(calls: list[tuple[int, int, Any]]) -> None:
    h = _cluster()
    for key, version, request in calls:
        try:
            result = h.controller.handle(key, version, request, h.context())
        except ApiError:
            continue
        response = make(response_schema(key, version), result.response)
        encode_response(1, response)  # it has a wire form at that version
        h.write(result.records)
        assert h.images_equal()
