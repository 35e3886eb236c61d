import itertools, sys, time, json
from shockwave.traces import load_workload
from shockwave.sim import simulate, SimulationConfig
from shockwave.policies.shockwave import Shockwave
w = load_workload("traces/canonical_120jobs.trace", "traces/tacc_throughputs.json")
grid = json.loads(sys.argv[1])
mech = sys.argv[2] if len(sys.argv) > 2 else "gavel"
keys = list(grid)
for values in itertools.product(*grid.values()):
    params = dict(zip(keys, values))
    pol = Shockwave(**params)
    t = time.perf_counter()
    r = simulate(w, pol, SimulationConfig(gpus=32, mechanics=mech))
    d = r.to_dict()
    print(f"{params} mk={d['makespan']:.0f} jct={d['avg_jct']:.0f} worst={d['worst_ftf']:.3f} unfair={100*d['unfair_fraction']:.1f}% util={d['utilization']:.3f} wall={time.perf_counter()-t:.1f}", flush=True)
