"""The sans-I/O KRaft consensus core.

Imports nothing that does I/O, reads a clock or draws randomness: time and a seeded random
source are inputs. ``tests/raft/test_purity.py`` enforces this.
"""
