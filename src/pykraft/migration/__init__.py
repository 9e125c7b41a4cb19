"""KIP-866: moving a ZooKeeper-mode Kafka cluster's metadata onto pykraft's controllers."""
