"""`pykraft demo` (placeholder until its issue lands)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser("demo", help="(not yet available)")
    parser.set_defaults(func=lambda args: 2)
