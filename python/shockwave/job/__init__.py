"""The job side of the runtime: what a training script uses to run under the shockwave scheduler.

A job process trains for as long as its *lease* lasts, reports its progress, changes its own
batch size, and checkpoints when the scheduler preempts it; it is launched again from its
checkpoint when it is next scheduled. Preemption must not change what a job computes: its
checkpoint holds everything needed to continue the same computation.

**A user's script** (declared in a workload as ``"run": {"command": ["python", "train.py"]}``)
uses :func:`connect` and the :class:`JobContext` it returns::

    import shockwave.job as job

    def main() -> None:
        ctx = job.connect(samples_per_epoch=N, batch_sizes=(16, 32, 64))
        with ctx:
            saved = ctx.restore()                  # None on a fresh start
            state = fresh_state() if saved is None else state_from(saved.arrays, saved.meta)
            while ctx.epochs_completed < ctx.launch.epochs:
                if ctx.should_stop():              # preempted (or SIGTERM, or lost scheduler)
                    ctx.stop(arrays_of(state), meta_of(state))
                    return
                n = train_one_step(state, ctx.batch_size)
                ctx.report(samples=n)              # increments: steps=1, samples=n
                if at_epoch_end(state) and should_grow(state):
                    ctx.set_batch_size(larger)     # must be in ctx.launch.batch_sizes
                if ctx.checkpoint_due:             # a periodic checkpoint was asked for
                    ctx.save(arrays_of(state), meta_of(state))
            ctx.finish(job.digest(params_of(state)))

Run without the scheduler, the same script trains alone (``connect``'s arguments describe the
job; the lease never ends). The API:

* :func:`connect` ``(*, samples_per_epoch=None, batch_sizes=None, checkpoint_path=None,
  initial_batch_size=None, epochs=None) -> JobContext``; :meth:`JobContext.standalone`
  ``(launch)`` and :meth:`JobContext.attach` ``(launch, address, authkey)``.
* :class:`JobContext`: ``launch``, ``lease``, ``steps``, ``samples``, ``batch_size``,
  ``epochs_completed``, ``epoch_progress``, ``epoch_batch_sizes``, ``busy_seconds``,
  ``checkpoint_due``, ``final_digest``; ``restore()``, ``should_stop()``,
  ``report(steps=1, samples=None, batch_size=None)``, ``set_batch_size(b)``,
  ``save(arrays, meta=None)``, ``stop(arrays, meta=None)``, ``finish(digest)``, ``fail(text)``,
  ``snapshot()``; a context manager that says ``failed`` when an exception escapes.
* :func:`save_checkpoint`, :func:`load_checkpoint`, :class:`Checkpoint`, :func:`digest`.

**Bundled jobs** (``"run": {"family": "mlp-digits", "seed": 1}``) are numpy models trained for
real (:data:`FAMILIES`), started by the runtime as ``python -m shockwave.job``
(:func:`train`), changing their batch size by their launch's mode
(:mod:`shockwave.job.batch_size_adapter`: ``static``, ``gns``, ``accordion``).
:func:`run_standalone` trains one alone and returns its digest (a reference run);
:func:`measure_throughput` measures a family's step in a fresh process (iterations per second on
a number of threads).

The scheduler's side of the conversation is :mod:`shockwave.job.protocol`; the launch description
is :mod:`shockwave.job.spec` (how to run a job, a workload's ``run``, is the data model's
:class:`shockwave.run_spec.RunSpec`); :mod:`shockwave.job.harness` serves the protocol to one job
by a script (tests, preemption checks). ``docs/job.md`` is the guide.
"""

from __future__ import annotations

from shockwave.job.checkpoint import Checkpoint, digest, load_checkpoint, save_checkpoint
from shockwave.job.context import JobContext, connect, standalone_launch
from shockwave.job.families import FAMILIES, Family
from shockwave.job.protocol import Lease, Report
from shockwave.job.spec import JobLaunch
from shockwave.job.throughput_probe import measure_throughput
from shockwave.job.trainer import run_standalone, train

__all__ = [
    "FAMILIES",
    "Checkpoint",
    "Family",
    "JobContext",
    "JobLaunch",
    "Lease",
    "Report",
    "connect",
    "digest",
    "load_checkpoint",
    "measure_throughput",
    "run_standalone",
    "save_checkpoint",
    "standalone_launch",
    "train",
]
