"""Backup and restore of the metadata log (issue 48 item 4): ``take.py`` keeps a copy of a
controller's metadata log directory up to date (``pykraft metadata backup``), ``restore.py``
builds a new quorum's first controller from such a copy at a chosen offset or time
(``pykraft metadata restore``). A backup is laid out as a metadata log directory, so
``pykraft pipeline`` and ``metadata-recovery survey`` read it as they read a controller's."""
