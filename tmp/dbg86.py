import numpy as np
from shockwave.traces import GeneratorParameters, generate_workload
from shockwave.policies.shockwave import Shockwave
from shockwave.sim import simulate, SimulationConfig
w = generate_workload(GeneratorParameters(jobs=460, gpus=128, seed=1))
J = 86
job = w[J]; print(job.model, job.mode, job.gang_size, job.num_epochs, job.batch_sizes[:5], job.epoch_seconds[:3], job.exclusive_seconds)
class P(Shockwave):
    def schedule(self, state):
        out = super().schedule(state)
        plan = self.last_plan
        if J in state.job_ids.tolist() and state.round_index % 10 == 0:
            i = state.job_ids.tolist().index(J); k = plan.job_ids.tolist().index(J)
            sol = plan.solution
            print(state.round_index, "N", state.num_active, "prog", round(float(state.epoch_progress[i]),2), "bs", state.batch_size[i], "R", round(float(plan.remaining_seconds[k])), "rho", round(float(plan.rho_hat[k]),2), "budget", f"{plan.budgets[k]:.3g}", "median budget", f"{np.median(plan.budgets):.3g}", "val0", f"{sol.prediction_a if False else 0}", "share", round(float(sol.shares[k].sum()),2), "ran", J in np.asarray(out).tolist())
        return out
simulate(w, P(makespan_weight=0.5, remaining_exponent=4.0, fairness_exponent=0.0), SimulationConfig(gpus=128, mechanics="gavel"))
