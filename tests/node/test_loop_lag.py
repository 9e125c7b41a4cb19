"""The event-loop lag sampler (``node/loop_lag.py``): a loop held by a blocking step is seen
with about the time it was held; the window's maximum forgets old stalls, the all-time one
does not."""

from __future__ import annotations

import asyncio
import time

from pykraft.node.loop_lag import LoopLag


def test_a_held_loop_is_measured() -> None:
    async def main() -> LoopLag:
        lag = LoopLag()
        lag.start(asyncio.get_running_loop())
        await asyncio.sleep(0.05)
        time.sleep(0.3)  # the loop held: no timer can run
        await asyncio.sleep(0.05)
        lag.stop()
        return lag

    lag = asyncio.run(main())
    assert 250 <= lag.max_ms() <= 2_000, lag.max_ms()
    assert lag.max_ever_ms == lag.max_ms()
    names = {name: value for name, _, value in lag.metrics()}
    assert names["pykraft_event_loop_lag_max_ms"] == lag.max_ms()


def test_the_window_keeps_the_largest_recent_lag() -> None:
    lag = LoopLag(window_s=60)
    lag.note(500, at=0)
    lag.note(20, at=10)
    lag.note(80, at=30)
    lag.note(-3, at=31)  # a timer run early counts as no lag
    assert lag.max_ms(now=40) == 500
    assert lag.max_ms(now=65) == 80  # the 500 ms stall left the window
    assert lag.max_ms(now=95) == 0.0
    assert lag.max_ever_ms == 500
