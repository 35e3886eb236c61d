"""``gandiva-fair`` on a typed cluster: equal shares of every type, then trading between types.

Gandiva_fair (Chaudhary et al., EuroSys '20) gives every user an equal share of the cluster and
lets users trade GPU time of one type for another: a user whose jobs speed up more on a faster
type buys that type's time from a user whose jobs gain less, paying in slower GPU time at a price
between the two speedups, so both gain and nobody's fair share is worth less. Here, as in our
homogeneous ``gandiva-fair`` (the Shockwave artifact's ``gandiva_fair``), every job is a user
and weights and gang sizes do not change the shares:

1. **equal shares**: ``X[i, k] = N_k / n`` for every job, each row scaled down to sum to at most
   1 (on one type: ``min(1, G / n)``, the homogeneous policy's share);
2. **trading** (``gandiva-fair``; ``gandiva-fair-agnostic`` stops after step 1), for every pair
   of types ``(a, b)`` in the cluster's order, repeatedly: the *buyer* is the job with the
   largest speedup ``T[i, a] / T[i, b]`` still holding time on ``b``, the *seller* the job with
   the smallest speedup still holding time on ``a``; if the buyer's speedup exceeds the
   seller's, the seller gives GPU time on ``a`` and receives ``p`` times as much GPU time on
   ``b``, at the geometric mean ``p`` of the two speedups (each clipped to ``[1e-3, 1e3]``),
   as much as the seller's time on ``a``, the buyer's time on ``b`` and the rule ``sum_k X[i, k]
   <= 1`` allow. GPU time is ``gang x share``, so each type's GPU time in use is unchanged. The
   passes repeat until none trades. Every trade raises both jobs' effective throughput
   ``sum_k T[i, k] X[i, k]``.

Trading at the geometric mean is our choice of a price between the two speedups (Gandiva_fair
requires only that it lie between them for both users to gain).
"""

from __future__ import annotations

import math

import numpy as np

from shockwave.heterogeneous.protocol import FloatArray, TypedAllocationPolicy, TypedAllocationState

#: Speedups are clipped to ``[1 / _SPEEDUP_CAP, _SPEEDUP_CAP]`` for pricing (a job without a
#: throughput on a type has an infinite speedup towards the other).
_SPEEDUP_CAP = 1e3
#: Trades smaller than this (GPU-time share) end a pair's trading.
_MIN_TRADE = 1e-12
#: At most this many passes over the type pairs.
_MAX_PASSES = 50


class TypedGandivaFair(TypedAllocationPolicy):
    """``gandiva-fair`` / ``gandiva-fair-agnostic`` (see the module notes)."""

    def __init__(self, *, aware: bool = True) -> None:
        self.aware = aware
        self.name = "gandiva-fair" if aware else "gandiva-fair-agnostic"
        self.gavel_name = ""
        self.shuffles_type_order = not aware

    def allocate(self, state: TypedAllocationState) -> FloatArray:
        n = state.num_active
        counts = state.counts.astype(np.float64)
        share = np.repeat((counts / n)[None, :], n, axis=0)
        x: FloatArray = share / np.maximum(share.sum(axis=1), 1.0)[:, None]
        if self.aware and len(state.types) > 1:
            trade(x, state.throughput, state.gang.astype(np.float64))
        return np.clip(x, 0.0, 1.0)


def trade(x: FloatArray, throughput: FloatArray, gang: FloatArray) -> None:
    """Gandiva_fair's trading between every pair of types, in place (module notes)."""
    k = x.shape[1]
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    for _ in range(_MAX_PASSES):
        traded = False
        for a, b in pairs:
            traded |= _trade_pair(x, throughput, gang, a, b)
        if not traded:
            return


def _trade_pair(x: FloatArray, throughput: FloatArray, gang: FloatArray, a: int, b: int) -> bool:
    """Trade GPU time on ``a`` for time on ``b`` until no trade helps; whether any did."""
    with np.errstate(divide="ignore", invalid="ignore"):
        speedup = throughput[:, a] / throughput[:, b]  # inf: no throughput on b; nan: on none
    usable = ~np.isnan(speedup)
    blocked_buyers = np.zeros(x.shape[0], dtype=bool)
    blocked_sellers = np.zeros(x.shape[0], dtype=bool)
    traded = False
    while True:
        buyers = np.flatnonzero((x[:, b] > 0.0) & usable & ~blocked_buyers)
        sellers = np.flatnonzero((x[:, a] > 0.0) & usable & ~blocked_sellers)
        if not buyers.shape[0] or not sellers.shape[0]:
            return traded
        buyer = int(buyers[np.argmax(speedup[buyers])])
        seller = int(sellers[np.argmin(speedup[sellers])])
        if buyer == seller or not speedup[buyer] > speedup[seller]:
            return traded
        s_buy = min(max(float(speedup[buyer]), 1.0 / _SPEEDUP_CAP), _SPEEDUP_CAP)
        s_sell = min(max(float(speedup[seller]), 1.0 / _SPEEDUP_CAP), _SPEEDUP_CAP)
        price = math.sqrt(s_buy * s_sell)
        # GPU time on a moving from the seller to the buyer (price x as much on b comes back)
        limits = {
            "seller": gang[seller] * x[seller, a],
            "buyer": gang[buyer] * x[buyer, b] / price,
        }
        if price > 1.0:  # the seller's total share grows
            limits["seller room"] = gang[seller] * (1.0 - float(x[seller].sum())) / (price - 1.0)
        elif price < 1.0:  # the buyer's grows
            limits["buyer room"] = gang[buyer] * (1.0 - float(x[buyer].sum())) / (1.0 - price)
        binding = min(limits, key=lambda name: limits[name])
        amount = limits[binding]
        if amount <= _MIN_TRADE:
            if binding.startswith("seller"):
                blocked_sellers[seller] = True
            else:
                blocked_buyers[buyer] = True
            continue
        x[seller, a] = max(x[seller, a] - amount / gang[seller], 0.0)
        x[buyer, a] += amount / gang[buyer]
        x[buyer, b] = max(x[buyer, b] - price * amount / gang[buyer], 0.0)
        x[seller, b] += price * amount / gang[seller]
        traded = True
