"""What an operator deploys beside a pykraft cluster: the Grafana dashboard and the Prometheus
alert rules (``ops/grafana/``, ``ops/prometheus/`` at the repository's top, written by
``python -m pykraft.ops --write`` and checked by ``--check``)."""
