"""D8 on real processes: an observer whose fetches to the leader were lost for longer than its
fetch timeout looks for the leader through the bootstrap servers, and must come back to it once
the network heals. Before the fix (simulator seeds 6122 and 7940) the bootstrap servers'
answers named the leader it already followed and were ignored, and the leader's own answers,
reached through its bootstrap address, were not taken as the leader's: the observer fetched
nothing until the next election.
"""

from __future__ import annotations

import time
from pathlib import Path

from pykraft.faults.cluster import FaultCluster
from pykraft.faults.monitor import Monitor
from pykraft.faults.net import Network


def test_an_observer_cut_off_from_the_leader_follows_it_again_after_the_heal(
    tmp_path: Path,
) -> None:
    with Network([1, 2, 3, 4]) as network:
        cluster = FaultCluster(tmp_path, voters=3, observers=1, network=network)
        monitor = Monitor(cluster)
        try:
            cluster.setup()
            for node_id in cluster.nodes:
                cluster.start(node_id)
            monitor.start()
            assert monitor.wait(lambda: monitor.leader is not None, 60), "no leader"
            assert monitor.leader is not None
            leader, epoch = monitor.leader
            network.drop(4, leader)  # the observer's packets to the leader are lost
            time.sleep(5)  # past its fetch timeout (2 s): it goes round the bootstrap servers
            network.heal()
            healed = time.monotonic()

            def caught_up() -> bool:
                lead = monitor.samples.get(leader, {}).get("high_watermark", -1)
                mine = monitor.samples.get(4, {}).get("high_watermark", -2)
                return lead > 0 and mine >= lead - 5

            assert monitor.wait(caught_up, 20), (
                f"observer 4 did not catch up: {monitor.samples.get(4)} vs leader "
                f"{monitor.samples.get(leader)}\n{cluster.nodes[4].tail(40)}"
            )
            assert monitor.leader == (leader, epoch), "the leader changed: not the case tested"
            print(f"observer back {time.monotonic() - healed:.1f} s after the heal")
        finally:
            monitor.stop()
            cluster.teardown()
