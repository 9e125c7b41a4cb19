"""Fault runs on real processes (issue 13): ``pykraft server`` processes in network
namespaces, a seeded schedule of kill -9, SIGSTOP, graceful restarts, full disks and network
partitions, a workload whose acknowledged writes are checked on every replica afterwards.
See ``run.py`` for the whole run and ``pykraft dev faults run`` for the command."""
