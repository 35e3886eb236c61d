import numpy as np
from shockwave.traces import load_workload
from shockwave.sim import simulate, SimulationConfig
from shockwave.policies.shockwave import Shockwave
from shockwave.policies.shockwave import correction as C
orig = C.correct_plan
def wrapped(shares, val, gang, supply, floors):
    r = orig(shares, val, gang, supply, floors)
    if r.shares is not shares:
        u0 = (shares*gang[:,None]).sum(0)[:3]; u1=(r.shares*gang[:,None]).sum(0)[:3]
        print(r.status, "floors>0:", (floors>0).sum(), "plan use", u0.round(1), "->", u1.round(1), "row sums", shares.sum(1)[floors>0][:4].round(2), "->", r.shares.sum(1)[floors>0][:4].round(2), "floor", floors[floors>0][:4].round(2))
    return r
import shockwave.policies.shockwave.policy as P
P.correct_plan = wrapped
w = load_workload("traces/canonical_120jobs.trace", "traces/tacc_throughputs.json")
simulate(w, Shockwave(ftf_correction=True, planning_rounds=20), SimulationConfig(gpus=32, mechanics="gavel", max_rounds=30))
