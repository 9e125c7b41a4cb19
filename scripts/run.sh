#!/usr/bin/env bash
# Set everything up (first run only) and run pykraft's main job.
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
exec python -m pykraft.cli.main demo "$@"
