"""The series an expression of PromQL reads, found by parsing it as Prometheus does (the
``promql-parser`` package binds the parser of GreptimeDB's Rust crate, which follows
Prometheus' grammar): every vector selector's metric name."""

from __future__ import annotations

from typing import Final

import promql_parser

__all__ = ["PROMETHEUS_OWN", "series_names"]

# Series Prometheus makes itself rather than scrapes.
PROMETHEUS_OWN: Final = frozenset({"up", "scrape_duration_seconds"})
_CHILDREN: Final = ("lhs", "rhs", "expr", "args", "param", "vector_selector")


def series_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects (raises ``ValueError`` when it does not parse)."""
    names: set[str] = set()
    todo = [promql_parser.parse(expr)]
    while todo:
        node = todo.pop()
        if type(node).__name__ == "VectorSelector":
            names.add(node.name)
        for attr in _CHILDREN:
            child = getattr(node, attr, None)
            if isinstance(child, list):
                todo.extend(child)
            elif child is not None and not isinstance(child, (int, float, str)):
                todo.append(child)
    return names
