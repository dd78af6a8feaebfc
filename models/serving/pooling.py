"""World rules of a pool: the replicas of one configuration serving one workload in one
region, behind one router.

These are facts about the fleet, not about the program, so the planner (solver/) and the
independent verifier both read them from here:

- what one replica may be planned at: its capacity at the SLO, or nothing when it does
  not fit or cannot meet the SLO at any load (`planning_capacity`);
- what survives a failure: a pool of n replicas spread evenly over Z zones keeps
  n - ceil(n / Z) when its fullest zone is lost (`zone_survivors`), and n - 1 when one
  replica fails (`spare_survivors`).
"""

import math

from models.serving.replica import ReplicaCapacity


def planning_capacity(capacity: ReplicaCapacity) -> float:
    """Requests/s one replica carries at the SLO; 0 when it does not fit or cannot meet
    the SLO at any load."""
    if not (capacity.fits and capacity.meets_slo):
        return 0.0
    return max(capacity.requests_per_s, 0.0)


def zone_survivors(replicas: int, zones: int) -> int:
    """Replicas of a pool left when its region loses its fullest zone.

    n - ceil(n / Z): the pool is spread as evenly as it can be over Z zones, so the
    fullest zone holds ceil(n / Z) of its n replicas. One zone (Z = 1) loses all.
    """
    return replicas - math.ceil(replicas / zones)


def spare_survivors(replicas: int) -> int:
    """Replicas of a pool left when one of them fails: n - 1 (none of an empty pool)."""
    return max(replicas - 1, 0)
