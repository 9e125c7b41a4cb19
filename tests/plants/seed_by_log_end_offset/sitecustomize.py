"""Planted bug (tests/plants/README.md): the recovery of a lost majority seeds from the
longest log, not from the most up-to-date one (the last epoch first): a deposed leader's
unacknowledged tail can be longer than the committed log of the epoch after it."""

from __future__ import annotations

from pykraft.storage import survey

survey.DirectorySurvey.rank = property(  # type: ignore[method-assign,assignment]
    lambda s: (s.log_end_offset, s.last_epoch)
)
