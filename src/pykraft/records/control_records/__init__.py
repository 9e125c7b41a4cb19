"""Codecs generated from ``pykraft/records/schemas`` (``python -m pykraft.schema.generate``). Do not edit."""

from __future__ import annotations

from typing import Any, Final

from pykraft.records.control_records.k_raft_version_record import KRaftVersionRecord
from pykraft.records.control_records.leader_change_message import LeaderChangeMessage
from pykraft.records.control_records.snapshot_footer_record import SnapshotFooterRecord
from pykraft.records.control_records.snapshot_header_record import SnapshotHeaderRecord
from pykraft.records.control_records.voters_record import VotersRecord

__all__ = ['KRaftVersionRecord', 'LeaderChangeMessage', 'SnapshotFooterRecord', 'SnapshotHeaderRecord', 'VotersRecord']
