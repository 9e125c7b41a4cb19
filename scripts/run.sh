#!/usr/bin/env bash
# Set everything up (first run only) and run pykraft's main job: a local 3-controller
# quorum on 127.0.0.1 (data in ./pykraft-local, reused on restart) until Ctrl-C.
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
exec python -m pykraft.cli.main local up "$@"
