"""``storage format --add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret]'``: SCRAM
users in the bootstrap checkpoint, parsed as Kafka's ScramParser parses them
(docs/kafka/SECURITY-CONTRACT.md 3.3), so that a new cluster has users before it has a
controller (the brokers' and controllers' own, typically).

The value after the mechanism is ``[k=v,...]``: ``name`` (required) and either ``password``
or ``saltedpassword`` with ``salt`` (both base64); ``iterations`` defaults to 4096 within
[4096, 16384]; a value in double quotes is unquoted; values cannot hold commas. Every problem
is a ConfigError with Kafka's message.
"""

from __future__ import annotations

import base64
import binascii
import secrets

from pykraft.metadata import records as r
from pykraft.metadata.scram import (
    MAX_ITERATIONS,
    MECHANISMS,
    MIN_ITERATIONS,
    salted_password,
    scram_keys,
)
from pykraft.storage.properties import ConfigError

__all__ = ["parse_add_scram"]

_BY_NAME = {name: kind for kind, (name, _) in MECHANISMS.items()}


def _b64(key: str, value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"--add-scram: {key} is not base64") from None


def parse_add_scram(text: str) -> r.UserScramCredentialRecord:
    mechanism_name, sep, rest = text.partition("=")
    mechanism = _BY_NAME.get(mechanism_name.strip())
    if not sep or mechanism is None:
        raise ConfigError(f"The add-scram mechanism {mechanism_name} is not supported.")
    rest = rest.strip()
    if not (rest.startswith("[") and rest.endswith("]")):
        raise ConfigError(f"Expected configuration string to start with [ and end with ]: {rest}")
    options: dict[str, str] = {}
    for part in rest[1:-1].split(","):
        if not part.strip():
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise ConfigError(f"Unable to find an equal sign in SCRAM configuration: {part}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        options[key.strip()] = value
    unknown = sorted(set(options) - {"name", "password", "saltedpassword", "salt", "iterations"})
    if unknown:
        raise ConfigError(f"Unknown SCRAM configurations: {', '.join(unknown)}")
    name = options.get("name")
    if not name:
        raise ConfigError("You must supply 'name' to add-scram")
    try:
        iterations = int(options.get("iterations", str(MIN_ITERATIONS)))
    except ValueError:
        raise ConfigError("--add-scram: iterations must be an integer") from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ConfigError(
            f"The number of iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}."
        )
    if "saltedpassword" in options:
        if "password" in options:
            raise ConfigError("You cannot supply both 'password' and 'saltedpassword' to add-scram")
        if "salt" not in options:
            raise ConfigError("You must supply 'salt' with 'saltedpassword' to add-scram")
        salt = _b64("salt", options["salt"])
        salted = _b64("saltedpassword", options["saltedpassword"])
    else:
        if "password" not in options:
            raise ConfigError("You must supply one of 'password' or 'saltedpassword' to add-scram")
        salt = _b64("salt", options["salt"]) if "salt" in options else secrets.token_bytes(32)
        salted = salted_password(mechanism, options["password"], salt, iterations)
    stored_key, server_key = scram_keys(mechanism, salted)
    return r.UserScramCredentialRecord(
        name=name,
        mechanism=mechanism,
        salt=salt,
        stored_key=stored_key,
        server_key=server_key,
        iterations=iterations,
    )
