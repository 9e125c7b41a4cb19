"""The one error of replay: a record that cannot be applied to the image (a log that cannot
be replayed). Raised by the image and its parts alike; the loaders report it with the
record's offset."""

from __future__ import annotations

__all__ = ["ImageError"]


class ImageError(ValueError):
    """A record that cannot be applied to the image (a log that cannot be replayed)."""
