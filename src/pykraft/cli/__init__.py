"""The ``pykraft`` command line: one command, Kafka-style subcommands."""
