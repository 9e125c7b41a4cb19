"""The controller's API table (``protocol/controller_apis.py``) against what uses it: the
controller handles exactly its APIs, and every field it names exists at every version served."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from pykraft.controller import handlers
from pykraft.controller.handlers import HANDLERS
from pykraft.net.apis import NODE_APIS
from pykraft.protocol import views
from pykraft.protocol.apis import ApiKey, request_schema, response_schema
from pykraft.protocol.controller_apis import (
    CONTROLLER_APIS,
    FORWARDABLE,
    READ_APIS,
    ControllerApi,
    authorized_items,
)
from pykraft.protocol.view_gen import CONTROLLER_REGISTRATION_VERSIONS, generate_views
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


def test_the_request_views_are_generated_from_the_served_classes() -> None:
    stale = [p for p, text in generate_views().items() if not p.exists() or p.read_text() != text]
    assert stale == [], "run python -m pykraft.protocol.view_gen"
    registration = next(a for a in NODE_APIS if a.key == ApiKey.CONTROLLER_REGISTRATION)
    assert registration.versions == CONTROLLER_REGISTRATION_VERSIONS


@pytest.mark.parametrize("row", ROWS, ids=[row.key.name for row in ROWS])
def test_each_view_has_the_fields_every_served_version_has(row: ControllerApi) -> None:
    """A handler reads its request through the view: the view's fields are exactly those of
    every version served (one only some versions have is read with a default)."""
    classes = [request_schema(row.key, v) for v in range(row.versions[0], row.versions[1] + 1)]
    common = set.intersection(*({f.name for f in dataclasses.fields(c)} for c in classes))
    common.discard("unknown_tagged_fields")
    view = _view(row)
    properties = {n for n, v in vars(view).items() if isinstance(v, property)}
    assert properties == common


@pytest.mark.parametrize("row", ROWS, ids=[row.key.name for row in ROWS])
def test_each_handler_takes_its_apis_view_and_returns_its_response(row: ControllerApi) -> None:
    handler = HANDLERS[row.key].handle
    hints = typing.get_type_hints(handler, vars(handlers))
    assert hints["request"] is _view(row)
    name = response_schema(row.key, row.versions[1]).__name__
    answer = getattr(views, name.removesuffix(f"V{row.versions[1]}"))
    assert typing.get_args(hints["return"]) == (answer,)  # Result[<its API's response>]


def _view(row: ControllerApi) -> type:
    """The view of ``row``'s request (pykraft's own classes are named ``...V<version>``)."""
    name = request_schema(row.key, row.versions[1]).__name__
    return getattr(views, name.removesuffix(f"V{row.versions[1]}"))
