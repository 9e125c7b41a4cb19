"""pykraft.sim: the deterministic simulator (see ``simulator`` for the theory of operation).

Programmatic use (one seed; the Spark sweep job calls ``run`` per seed)::

    from pykraft.sim import SimConfig, run
    result = run(SimConfig.make(seed=7, profile="chaos", voters=3, observers=1, events=20_000))
    assert result.violation is None, result.summary()
"""

from pykraft.sim.config import LIVENESS_BOUND_MS, SimConfig, SimResult, Violation
from pykraft.sim.profiles import PROFILES, FaultProfile, get_profile
from pykraft.sim.simulator import Simulation, run
from pykraft.sim.sweep import SweepReport, sweep
from pykraft.sim.trace import TraceWriter

__all__ = [
    "LIVENESS_BOUND_MS",
    "PROFILES",
    "FaultProfile",
    "SimConfig",
    "SimResult",
    "Simulation",
    "SweepReport",
    "TraceWriter",
    "Violation",
    "get_profile",
    "run",
    "sweep",
]
