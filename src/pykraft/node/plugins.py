"""Plug-ins named by class in a node's config (Kafka's ``*.class.name`` settings), loaded at
start: ``create.topic.policy.class.name`` and ``alter.config.policy.class.name``
(``controller/policies.py``).

Theory of operation. A value is a Python class, ``package.module:Class`` or
``package.module.Class``, importable by the server's interpreter (on ``PYTHONPATH``). It is
instantiated without arguments; when it has ``configure``, that is called with every
property of the node's config (Kafka's ``Configurable.configure``). A Java class name
(``org.apache.…``, ``io.confluent.…``, or anything that cannot be imported) is refused at
start with one line saying what pykraft takes instead: a plug-in written for Kafka's JVM
cannot run here, and silently ignoring a safety policy would let through what it refuses.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from pykraft.storage.properties import ConfigError

__all__ = ["load_plugin"]

JAVA_PREFIXES = ("org.apache.", "io.confluent.", "com.", "kafka.")


def load_plugin(key: str, name: str, props: Mapping[str, str], needs: str) -> object:
    """An instance of the class ``name`` names, which must have the method ``needs``;
    raises ConfigError naming ``key``."""
    name = name.strip()
    module_name, sep, class_name = name.partition(":")
    if not sep:
        module_name, _, class_name = name.rpartition(".")
    if not module_name or not class_name:
        raise ConfigError(key, f"expected package.module:Class, got {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        hint = (
            " (a Java class: pykraft takes a Python class, package.module:Class, whose "
            f"{needs}() has the shape of Kafka's interface)"
            if name.startswith(JAVA_PREFIXES)
            else ""
        )
        raise ConfigError(key, f"cannot import {module_name}: {e}{hint}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type):
        raise ConfigError(key, f"{module_name} has no class {class_name}")
    try:
        plugin = cls()
    except Exception as e:
        raise ConfigError(key, f"{name}() failed: {type(e).__name__}: {e}") from None
    if not callable(getattr(plugin, needs, None)):
        raise ConfigError(key, f"{name} has no {needs}() method")
    configure = getattr(plugin, "configure", None)
    if callable(configure):
        try:
            configure(dict(props))
        except Exception as e:
            raise ConfigError(key, f"{name}.configure failed: {type(e).__name__}: {e}") from None
    return plugin
