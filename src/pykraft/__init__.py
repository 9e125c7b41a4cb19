"""pykraft: Apache Kafka's KRaft metadata quorum in Python.

Importing it first installs the compiled consensus core when a current build exists
(``pykraft.native``); otherwise every module is the interpreted source."""

from pykraft import native as _native

__version__ = "0.2.0.dev0"

_native.install()
