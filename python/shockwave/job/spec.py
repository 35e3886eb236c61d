"""What a job process is told at launch (:class:`JobLaunch`).

A job of a workload that can run for real carries a :class:`~shockwave.run_spec.RunSpec` (a
bundled model family or a user's command). When the runtime starts (or resumes) the job on its
GPU slots, the job process receives a :class:`JobLaunch` (which holds that ``RunSpec``) as JSON
in the environment variable :data:`ENV_JOB`, together with the variables listed below.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from shockwave.arguments import is_integer
from shockwave.run_spec import RunSpec

#: JSON of the :class:`JobLaunch` of this process.
ENV_JOB = "SHOCKWAVE_JOB"
#: Address of the scheduler's channel (a Unix socket path) for this process.
ENV_CHANNEL = "SHOCKWAVE_CHANNEL"
#: Hex key authenticating the channel connection.
ENV_AUTHKEY = "SHOCKWAVE_AUTHKEY"
#: Comma-separated ids of the GPU slots the job holds (``"0,1"``), on GPUs and CPU slots alike.
ENV_GPUS = "SHOCKWAVE_GPUS"
#: The GPU type of the job's slots on a heterogeneous cluster (``"v100"``; unset otherwise).
ENV_GPU_TYPE = "SHOCKWAVE_GPU_TYPE"
#: Variables that cap a job's CPU threads (BLAS, OpenMP) at the threads it was given.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

#: What a slot is: a real GPU, or one CPU thread on a machine without GPUs.
SlotKind = Literal["gpu", "cpu"]


@dataclass(frozen=True)
class JobLaunch:
    """What a job process is told when it is started (JSON in :data:`ENV_JOB`).

    Attributes:
        job_id: the job's id in the workload.
        incarnation: how many times the job was launched before this process (0 at first).
        model: model label (for a bundled job, the family's name).
        mode: adaptation mode, ``"static"``, ``"gns"`` or ``"accordion"``.
        epochs: epochs to train.
        batch_sizes: every batch size the job may run at (its regimes), ascending; a job must
            not report another one.
        initial_batch_size: batch size of the first epoch.
        samples_per_epoch: training samples in one epoch.
        gang_size: GPU slots the job holds.
        gpus: ids of those slots.
        slot_kind: ``"gpu"`` (real GPUs: ``CUDA_VISIBLE_DEVICES`` is set) or ``"cpu"`` (one CPU
            thread per slot).
        threads: CPU threads the job may use (BLAS and OpenMP are capped to it).
        checkpoint_path: where the job keeps its checkpoint (written atomically).
        run: how to run it.
        gpu_type: the GPU type of its slots on a heterogeneous cluster (``None`` on a
            homogeneous one).
    """

    job_id: int
    incarnation: int
    model: str
    mode: str
    epochs: int
    batch_sizes: tuple[int, ...]
    initial_batch_size: int
    samples_per_epoch: int
    gang_size: int
    gpus: tuple[int, ...]
    slot_kind: SlotKind
    threads: int
    checkpoint_path: str
    run: RunSpec
    gpu_type: str | None = None

    def to_json(self) -> str:
        """The JSON text passed in :data:`ENV_JOB`."""
        data = {
            "job_id": self.job_id,
            "incarnation": self.incarnation,
            "model": self.model,
            "mode": self.mode,
            "epochs": self.epochs,
            "batch_sizes": list(self.batch_sizes),
            "initial_batch_size": self.initial_batch_size,
            "samples_per_epoch": self.samples_per_epoch,
            "gang_size": self.gang_size,
            "gpus": list(self.gpus),
            "slot_kind": self.slot_kind,
            "threads": self.threads,
            "checkpoint_path": self.checkpoint_path,
            "run": self.run.to_dict(),
        }
        if self.gpu_type is not None:
            data["gpu_type"] = self.gpu_type
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> JobLaunch:
        """Inverse of :meth:`to_json`.

        Raises:
            ValueError: naming the field, for malformed text.
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{ENV_JOB}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{ENV_JOB}: must be a JSON object")
        try:
            launch = cls(
                job_id=_integer(data, "job_id", 0),
                incarnation=_integer(data, "incarnation", 0),
                model=str(data["model"]),
                mode=str(data["mode"]),
                epochs=_integer(data, "epochs", 1),
                batch_sizes=tuple(int(b) for b in data["batch_sizes"]),
                initial_batch_size=_integer(data, "initial_batch_size", 1),
                samples_per_epoch=_integer(data, "samples_per_epoch", 1),
                gang_size=_integer(data, "gang_size", 1),
                gpus=tuple(int(g) for g in data["gpus"]),
                slot_kind=data["slot_kind"],
                threads=_integer(data, "threads", 1),
                checkpoint_path=str(data["checkpoint_path"]),
                run=RunSpec.from_dict(data["run"]),
                gpu_type=None if data.get("gpu_type") is None else str(data["gpu_type"]),
            )
        except KeyError as exc:
            raise ValueError(f"{ENV_JOB}: field {exc.args[0]!r} is missing") from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{ENV_JOB}: {exc}") from None
        if launch.slot_kind not in ("gpu", "cpu"):
            raise ValueError(f"{ENV_JOB}: field 'slot_kind' must be 'gpu' or 'cpu'")
        sizes = list(launch.batch_sizes)
        if sizes != sorted(set(sizes)) or any(b < 1 for b in sizes):
            raise ValueError(
                f"{ENV_JOB}: field 'batch_sizes' must be ascending distinct integers >= 1, "
                f"got {sizes}"
            )
        if not launch.batch_sizes or launch.initial_batch_size not in launch.batch_sizes:
            raise ValueError(
                f"{ENV_JOB}: field 'batch_sizes' must list the initial batch size "
                f"{launch.initial_batch_size}"
            )
        if len(launch.gpus) != launch.gang_size:
            raise ValueError(f"{ENV_JOB}: field 'gpus' must hold gang_size = {launch.gang_size}")
        return launch


def _integer(data: dict[str, Any], key: str, minimum: int) -> int:
    value = data[key]
    if not is_integer(value, numpy=False) or value < minimum:
        raise ValueError(f"field {key!r} must be an integer >= {minimum}, got {value!r}")
    return value
