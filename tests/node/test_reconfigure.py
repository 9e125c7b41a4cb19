"""The controller listener's TLS rebuilt from this node's dynamic configs
(``node/reconfigure.py``), on an image driven by hand: only Kafka's reconfigurable SSL configs
of this node's listener count, only once committed; a store that does not load is counted and
the listener keeps its context. With real controllers and Kafka's kafka-configs:
``tests/interop/test_security.py``."""

from __future__ import annotations

import ssl
from pathlib import Path

from pykraft.interop.certs import LocalCA
from pykraft.metadata import records as r
from pykraft.metadata.image import BROKER_RESOURCE, Image
from pykraft.node.reconfigure import ListenerTls

KEY = "listener.name.controller.ssl.keystore.location"


def _config(image: Image, offset: int, name: str, value: str | None, node: str = "1") -> None:
    record = r.ConfigRecord(
        resource_type=BROKER_RESOURCE, resource_name=node, name=name, value=value
    )
    image.replay(record, 0, offset)


def test_reloads_on_committed_changes_of_this_nodes_listener(tmp_path: Path) -> None:
    ca = LocalCA(tmp_path / "ca")
    first, second = ca.issue("first"), ca.issue("second")
    props = {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(first.pem),
    }
    installed: list[ssl.SSLContext] = []
    tls = ListenerTls(props, "CONTROLLER", 1, installed.append)
    image = Image()
    image.record_uncommitted(True)  # as the active controller: applied before committed
    _config(image, 0, "listener.name.other.ssl.keystore.location", str(second.pem))
    _config(image, 1, "listener.name.controller.ssl.client.auth", "required")  # not reloadable
    _config(image, 2, KEY, str(second.pem), node="2")  # another node's
    image.committed(2)
    tls.check(image)
    assert installed == [] and tls.reloads == 0

    _config(image, 3, KEY, str(second.pem))
    tls.check(image)
    assert installed == []  # not committed yet
    image.committed(3)
    tls.check(image)
    assert len(installed) == 1 and tls.reloads == 1
    tls.check(image)
    assert len(installed) == 1  # unchanged: nothing rebuilt

    _config(image, 4, KEY, str(tmp_path / "missing.pem"))
    image.committed(4)
    tls.check(image)
    assert len(installed) == 1 and tls.failures == 1  # the listener keeps its context

    _config(image, 5, KEY, None)  # deleted: back to the file's own
    image.committed(5)
    tls.check(image)
    assert len(installed) == 2 and tls.reloads == 2
