"""Shared settings and strategies of the fuzz tests (``tests/test_fuzz_*.py``).

Every public entry point gets random, extreme and malformed inputs and must either return a
sound answer or raise the documented error naming the argument, file, line or field: never
another exception, never a crash. In CI (default profile) each fuzz test draws a few dozen fixed
examples; the campaign (``HYPOTHESIS_PROFILE=fuzz``) draws ``SHOCKWAVE_FUZZ_EXAMPLES`` (default
10,000) random examples per test. ``docs/reliability.md`` reports the campaign.
"""

from __future__ import annotations

import math
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: Whether the long campaign is running.
CAMPAIGN = os.environ.get("HYPOTHESIS_PROFILE") == "fuzz"
CAMPAIGN_EXAMPLES = int(os.environ.get("SHOCKWAVE_FUZZ_EXAMPLES", "10000"))


def fuzz(fast: int = 40) -> Any:
    """``@settings`` of a fuzz test: ``fast`` fixed examples in CI, the campaign's count else."""
    return settings(
        max_examples=CAMPAIGN_EXAMPLES if CAMPAIGN else fast,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )


#: Magnitudes from 1e-300 to 1e300, both signs, zeros and the edges of double precision.
magnitudes = st.one_of(
    st.integers(-300, 300).map(lambda e: 10.0**e),
    st.integers(-300, 300).map(lambda e: -(10.0**e)),
    st.sampled_from([0.0, -0.0, 5e-324, 2.2e-308, 1.7976931348623157e308, 1.0, 0.5]),
    st.floats(min_value=0.0, max_value=1.0),
)

#: Any float, NaN and infinities included.
any_float = st.one_of(
    magnitudes,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)

#: Integers across and past the 64-bit range.
any_int = st.one_of(
    st.integers(-5, 40),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31, 2**32, 2**53, 2**62, 2**63 - 1, 2**63, 2**64, 10**12]),
)

#: Values of the wrong kind.
junk = st.one_of(
    st.none(),
    st.text(max_size=8),
    st.booleans(),
    st.lists(st.integers(), max_size=3),
    st.just([[1, 2], [3]]),  # ragged
    st.just({"a": 1}),
)


def anything(numbers: Any = any_float) -> Any:
    """A value that is usually a number, sometimes of the wrong kind."""
    return st.one_of(numbers, numbers, numbers, any_int, junk)
