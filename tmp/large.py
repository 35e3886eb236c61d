import sys, json, time
import numpy as np
from shockwave.traces import GeneratorParameters, generate_workload
from shockwave.policies import make_policy
from shockwave.sim import simulate, SimulationConfig
jobs, gpus, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ia = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "-" else None
params = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
w = generate_workload(GeneratorParameters(jobs=jobs, gpus=gpus, seed=seed, mean_interarrival=ia))
for name, p in [("gavel", {}), ("shockwave", params)]:
    t = time.perf_counter()
    r = simulate(w, make_policy(name, p), SimulationConfig(gpus=gpus, mechanics="gavel"))
    d = r.to_dict(); f = np.array(d["ftf"])
    print(name, p, f"mk={d['makespan']:.0f} jct={d['avg_jct']:.0f} worst={d['worst_ftf']:.3f} unfair={100*d['unfair_fraction']:.1f}% n>1.05={int((f>1.05).sum())} wall={time.perf_counter()-t:.1f}")
    if name == "shockwave":
        df = r.jobs_frame(); df["gang"] = [j.gang_size for j in w]; df["excl"] = df["exclusive_seconds"]
        print(df.sort_values("ftf", ascending=False).head(8)[["job_id","arrival_time","jct","excl","ftf","gang","rounds_run","rounds_queued"]].to_string())
