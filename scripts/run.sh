#!/usr/bin/env bash
# Set everything up (first run only) and run pykraft's main job: a local Kafka cluster on
# 127.0.0.1 whose controllers are pykraft (3 pykraft controllers, 3 Apache Kafka 4.x brokers,
# Kafka's jars fetched once from Maven Central), data in ./pykraft-local (reused on restart),
# until Ctrl-C. Without Java/Maven the controllers run alone (it says why).
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
exec python -m pykraft.cli.main local up --brokers 3 "$@"
