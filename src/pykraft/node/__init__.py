"""pykraft.node: a KRaft process wiring the consensus core, storage, network and timers."""
