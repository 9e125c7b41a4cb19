"""The controller's API table (``protocol/controller_apis.py``) against what uses it: the
controller handles exactly its APIs, and every field it names exists at every version served."""

from __future__ import annotations

import dataclasses

import pytest

from pykraft.controller.handlers import HANDLERS
from pykraft.protocol.apis import request_schema, response_schema
from pykraft.protocol.controller_apis import (
    CONTROLLER_APIS,
    FORWARDABLE,
    READ_APIS,
    ControllerApi,
    authorized_items,
)
from tests.controller.harness import Harness

ROWS = sorted(CONTROLLER_APIS.values(), key=lambda row: row.key)


def test_the_controller_handles_exactly_the_apis_of_the_table() -> None:
    assert set(HANDLERS) == set(CONTROLLER_APIS)
    Harness()  # a controller builds with them


@pytest.mark.parametrize("row", ROWS, ids=[row.key.name for row in ROWS])
def test_each_row_names_fields_of_every_version_it_serves(row: ControllerApi) -> None:
    key, (low, high) = row.key, row.versions
    strict = row.strict_quota_from
    assert strict is None or low <= strict <= high
    for version in range(low, high + 1):
        items = authorized_items(key, version)
        if items is None:
            continue
        request, response = items
        assert request in {f.name for f in dataclasses.fields(request_schema(key, version))}
        assert response in {f.name for f in dataclasses.fields(response_schema(key, version))}


def test_reads_are_answered_where_they_arrive_never_forwarded() -> None:
    assert READ_APIS and not READ_APIS & FORWARDABLE
