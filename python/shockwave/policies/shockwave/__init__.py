"""The Shockwave policy (``shockwave.policies.shockwave``): market planning with fairness targets.

See :class:`~shockwave.policies.shockwave.policy.Shockwave` and ``docs/shockwave.md``.
"""

from shockwave.policies.shockwave.policy import Plan, Shockwave

__all__ = ["Plan", "Shockwave"]
