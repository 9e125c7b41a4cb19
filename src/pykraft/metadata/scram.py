"""SCRAM credentials as the metadata log stores them (UserScramCredentialRecord): Kafka's
mechanism types and the derivation of StoredKey and ServerKey (RFC 5802, as Kafka's
ScramFormatter), shared by AlterUserScramCredentials (``controller/scram.py``) and
``storage format --add-scram`` (``storage/scram.py``). The password is never stored."""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

__all__ = ["MAX_ITERATIONS", "MECHANISMS", "MIN_ITERATIONS", "salted_password", "scram_keys"]

# ScramMechanism type -> (Kafka's name, hashlib digest)
MECHANISMS: Final = {1: ("SCRAM-SHA-256", "sha256"), 2: ("SCRAM-SHA-512", "sha512")}
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384


def scram_keys(mechanism: int, salted: bytes) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) of a salted password."""
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return stored_key, server_key


def salted_password(mechanism: int, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2-HMAC over the password's UTF-8 bytes (no SASLprep, as
    Kafka)."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][1], password.encode(), salt, iterations)
