"""The settings of a secure local cluster (tests, benchmarks, ``pykraft local up --secure``):
SASL_SSL everywhere, as a production Kafka cluster runs.

* Controller listener ``CONTROLLER``: SASL_SSL with PLAIN (controllers and brokers dial it
  with their own user; SCRAM cannot authenticate a forming quorum: KAFKA-15513).
* Brokers' listener ``CLIENT``: SASL_SSL with SCRAM-SHA-512 (between brokers too) and PLAIN
  for clients; the SCRAM users are created at format time (``--add-scram``) on the
  controllers, the PLAIN ones are the JAAS ``user_`` entries of ``passwords``.
* Kafka's StandardAuthorizer on controllers and brokers; ``super.users`` are the broker,
  controller and admin principals.
* One throwaway CA (``certs.LocalCA``): a certificate per role, the CA as the trust store.

:meth:`SecureSetup.client_properties` writes what Kafka's tools take as
``--command-config``; :meth:`SecureSetup.kafka_python` gives kafka-python's arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from pykraft.interop.certs import LocalCA, NodeCert

__all__ = ["BROKER_LISTENER", "SecureSetup"]

BROKER_LISTENER: Final = "CLIENT"
STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
PLAIN_MODULE: Final = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE: Final = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTH_MODULE: Final = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


def _jaas(module: str, **options: str) -> str:
    return module + " required " + " ".join(f'{k}="{v}"' for k, v in options.items()) + ";"


@dataclass
class SecureSetup:
    """Under ``base``: the CA, certificates and passwords of one secure cluster."""

    base: Path
    passwords: dict[str, str] = field(
        default_factory=lambda: {
            "controller": "controller-secret",
            "broker": "broker-secret",
            "admin": "admin-secret",
        }
    )
    authorizer: bool = True
    # delegation.token.secret.key, the same on every controller and broker
    token_secret: str = "local-token-secret"
    # how brokers authenticate to the controllers: PLAIN, or OAUTHBEARER with Kafka's
    # unsecured tokens (the controllers then enable both)
    broker_controller_mechanism: str = "PLAIN"

    def __post_init__(self) -> None:
        self.ca = LocalCA(self.base / "certs")
        self.controller_cert: NodeCert = self.ca.issue("controller")
        self.broker_cert: NodeCert = self.ca.issue("broker")

    @property
    def super_users(self) -> str:
        return "User:controller;User:broker;User:admin"

    def _authz(self) -> dict[str, object]:
        tokens: dict[str, object] = {"delegation.token.secret.key": self.token_secret}
        if not self.authorizer:
            return tokens
        return {
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": self.super_users,
            **tokens,
        }

    def controller_config(self) -> dict[str, object]:
        """A controller (pykraft's or Kafka's): SASL_SSL with PLAIN on CONTROLLER (and the
        brokers' mechanism)."""
        users = {f"user_{name}": pw for name, pw in self.passwords.items()}
        oauth: dict[str, object] = {}
        if self.broker_controller_mechanism == "OAUTHBEARER":
            oauth["listener.name.controller.oauthbearer.sasl.jaas.config"] = _jaas(
                OAUTH_MODULE, unsecuredLoginStringClaim_sub="controller"
            )
        return {
            "listener.security.protocol.map": "CONTROLLER:SASL_SSL",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": ",".join(
                dict.fromkeys(("PLAIN", self.broker_controller_mechanism))
            ),
            **oauth,
            "listener.name.controller.plain.sasl.jaas.config": _jaas(
                PLAIN_MODULE,
                username="controller",
                password=self.passwords["controller"],
                **users,
            ),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": self.controller_cert.pem,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.ca.ca_pem,
            **self._authz(),
        }

    def broker_config(self) -> dict[str, object]:
        """A Kafka broker: PLAIN (or OAUTHBEARER) to the controllers; SCRAM-SHA-512 and
        PLAIN (the ``passwords`` as JAAS users) for clients on CLIENT."""
        if self.broker_controller_mechanism == "OAUTHBEARER":
            to_controllers: dict[str, object] = {
                "listener.name.controller.oauthbearer.sasl.jaas.config": _jaas(
                    OAUTH_MODULE, unsecuredLoginStringClaim_sub="broker"
                )
            }
        else:
            to_controllers = {
                "listener.name.controller.plain.sasl.jaas.config": _jaas(
                    PLAIN_MODULE, username="broker", password=self.passwords["broker"]
                )
            }
        return {
            "listener.security.protocol.map": f"CONTROLLER:SASL_SSL,{BROKER_LISTENER}:SASL_SSL",
            "sasl.mechanism.controller.protocol": self.broker_controller_mechanism,
            **to_controllers,
            "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            f"listener.name.{BROKER_LISTENER.lower()}.scram-sha-512.sasl.jaas.config": _jaas(
                SCRAM_MODULE, username="broker", password=self.passwords["broker"]
            ),
            f"listener.name.{BROKER_LISTENER.lower()}.plain.sasl.jaas.config": _jaas(
                PLAIN_MODULE,
                username="broker",
                password=self.passwords["broker"],
                **{f"user_{name}": pw for name, pw in self.passwords.items()},
            ),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": self.broker_cert.pem,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.ca.ca_pem,
            **self._authz(),
        }

    def format_args(self, users: dict[str, str] | None = None) -> tuple[str, ...]:
        """``--add-scram`` for the broker, the admin and ``users`` (name -> password)."""
        everyone = {"broker": self.passwords["broker"], "admin": self.passwords["admin"]}
        everyone.update(users or {})
        args: list[str] = []
        for name, password in everyone.items():
            args += ["--add-scram", f"SCRAM-SHA-512=[name={name},password={password}]"]
        return tuple(args)

    def client_properties(self, path: Path, user: str, password: str) -> Path:
        """A ``--command-config`` for Kafka's tools on the brokers' CLIENT listener."""
        path.write_text(
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            f"sasl.jaas.config={_jaas(SCRAM_MODULE, username=user, password=password)}\n"
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={self.ca.ca_pem}\n"
        )
        path.chmod(0o600)
        return path

    def controller_client_properties(self, path: Path, user: str, password: str) -> Path:
        """A ``--command-config`` for the controllers' listener (SASL_SSL with PLAIN):
        ``pykraft ... --bootstrap-controller``, ``kafka-metadata-quorum``."""
        path.write_text(
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=PLAIN\n"
            f"sasl.jaas.config={_jaas(PLAIN_MODULE, username=user, password=password)}\n"
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={self.ca.ca_pem}\n"
        )
        path.chmod(0o600)
        return path

    def token_properties(self, path: Path, token_id: str, token_hmac: str) -> Path:
        """A ``--command-config`` authenticating with a delegation token (SCRAM,
        ``tokenauth``)."""
        jaas = _jaas(SCRAM_MODULE, username=token_id, password=token_hmac, tokenauth="true")
        path.write_text(
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            f"sasl.jaas.config={jaas}\n"
            "ssl.truststore.type=PEM\n"
            f"ssl.truststore.location={self.ca.ca_pem}\n"
        )
        path.chmod(0o600)
        return path

    def kafka_python(
        self, user: str, password: str, mechanism: str = "SCRAM-SHA-512"
    ) -> dict[str, object]:
        """kafka-python's arguments for ``user`` on the CLIENT listener (SCRAM-SHA-512 or
        PLAIN)."""
        return {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": password,
            "ssl_cafile": str(self.ca.ca_pem),
        }
