"""Controller registration (KIP-919): the RegisterControllerRecord the active controller
writes when a controller registers new or changed listeners and features, as Kafka's
``ClusterControlManager.registerController``. Pure functions of the image."""

from __future__ import annotations

import uuid

from pykraft.metadata import records as r
from pykraft.metadata.image import Image
from pykraft.metadata.versions import IBP_3_7_IV0
from pykraft.protocol import views

__all__ = ["controller_record", "supported_features"]


def supported_features(m: views.ControllerRegistrationRequest) -> dict[str, tuple[int, int]]:
    """A ControllerRegistration's feature ranges by name."""
    return {
        f.name: (int(f.min_supported_version), int(f.max_supported_version)) for f in m.features
    }


def controller_record(
    image: Image, metadata_version: int, m: views.ControllerRegistrationRequest
) -> r.RegisterControllerRecord | None:
    """The record of ControllerRegistration ``m``; None below 3.7-IV0 or when the image
    already holds this incarnation with the same endpoints and features."""
    if metadata_version < IBP_3_7_IV0:
        return None
    features = supported_features(m)
    record = r.RegisterControllerRecord(
        controller_id=int(m.controller_id),
        # kio reads the all-zero UUID as None; the record holds Kafka's zero UUID.
        incarnation_id=m.incarnation_id or uuid.UUID(int=0),
        zk_migration_ready=bool(m.zk_migration_ready),
        end_points=tuple(
            r.register_controller_record.ControllerEndpoint(
                name=listener.name,
                host=listener.host,
                port=int(listener.port),
                security_protocol=int(listener.security_protocol),
            )
            for listener in m.listeners
        ),
        features=tuple(
            r.register_controller_record.ControllerFeature(
                name=name, min_supported_version=lo, max_supported_version=hi
            )
            for name, (lo, hi) in sorted(features.items())
        ),
    )
    existing = image.controllers.get(record.controller_id)
    if (
        existing is not None
        and existing.incarnation_id == record.incarnation_id
        and existing.endpoints == record.end_points
        and existing.features == features
    ):
        return None
    return record
