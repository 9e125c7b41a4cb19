"""Errors of the network edge's configuration (no dependency on the node's config reader,
which turns them into its ``ConfigError``)."""

from __future__ import annotations

__all__ = ["SecurityConfigError"]


class SecurityConfigError(ValueError):
    """A security config that cannot work: ``key`` and the problem, in one line."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"invalid config {key}: {problem}")
        self.key = key
        self.problem = problem
