"""Typed views of UNREGISTER_CONTROLLER's request, v0-v0 (``python -m pykraft.protocol.view_gen``, from the message classes). Do not edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol


__all__ = ['UnregisterControllerRequest']


class UnregisterControllerRequest(Protocol):
    @property
    def controller_id(self) -> int: ...


if TYPE_CHECKING:
    from pykraft.protocol.generated.unregister_controller_request import UnregisterControllerRequest as _V0

    def _every_version_is_a_view(v0: _V0) -> tuple[UnregisterControllerRequest, ...]:
        return (v0,)
