"""The seeded rule that gives every job of a production trace a model family, an adaptation mode
and epochs, and builds its per-epoch profile.

The public traces record when a job was submitted, how many GPUs it held and for how long, but
not what it trained. The simulator needs a per-epoch profile (batch size and duration of every
epoch), so each job gets one by this rule, in the spirit of Gavel's sampling of job types for its
Philly-derived workloads (a job type drawn uniformly from the job table) and of the original
Shockwave generator's mode mix:

1. **Random numbers.** Two uniform numbers in ``[0, 1)`` per job, from the job's id alone:
   BLAKE2b (16-byte digest) of the UTF-8 text ``"<seed>\\0<source_id>"``; each 8-byte half, read
   big-endian and shifted right by 11 bits, times ``2**-53``. A job's assignment therefore does
   not depend on the other jobs, on the file's order or on the filters, and is the same bit for
   bit on every machine.
2. **Job type.** The candidates are the original generator's 21 job types (model family and
   initial batch size, :data:`~shockwave.catalog.ORIGINAL_JOB_TEMPLATES`); a job of more than one
   GPU takes one of the 16 whose model can be distributed (Recommendation runs on 1 GPU). A
   candidate needs a positive throughput in the table at its initial batch size (and at the batch
   sizes its adaptation can reach) at some gang size at most the job's. The job takes candidate
   ``floor(u1 * n)``.
3. **Mode.** ``mixed`` (default): Accordion if ``u2 < 0.5``, else GNS (the original generator's
   mix, static 0, Accordion 0.5, GNS 0.5); an Accordion job shorter than 1,000 s becomes static
   (the original's rule). ``static``: every job is static.
4. **Epoch durations at the job's gang.** ``r``, the reference gang, is the largest gang size
   ``<= g`` the table has for the job type (the bundled tables hold 1, 2, 4 and 8 GPUs); an epoch
   at batch size ``b`` lasts ``t(b) = ((S / b) / thr(model, b, r)) * r / g`` seconds, ``S`` the
   family's samples per epoch: the table's epoch, sped up linearly beyond the table's gangs.
5. **Epochs.** ``E = round(D / t(b0))`` (halves up), ``D`` the trace's run time: the epochs
   the job would train at its initial batch size; at least 1, at most 10,000 and at most one per
   millisecond of ``D`` (``floor(D / 0.001)``: no absurdly short epoch). Their batch sizes
   follow the mode's profile rules (:func:`shockwave.profile_rules.batch_size_schedule`: Accordion's
   critical regimes, the GNS staircases).
6. **Scaling.** ``k = D / T``, with ``T`` the sum of ``t(b_e)`` over the ``E`` epochs (computed
   as ``math.fsum`` over the distinct batch sizes ``b`` of (epochs at ``b``) x ``t(b)``); every
   epoch lasts ``t(b_e) * k`` and the job's ``samples_per_epoch`` is ``round(S * k)`` (at least
   1, at most ``2**63 - 1``): the job trains its family on a dataset ``k`` times the catalog's,
   at the table's throughput, so its exclusive runtime (the sum of its epochs) is the trace's
   ``D`` up to floating-point rounding, well within one epoch. (``k`` is near 1 for static
   jobs, above 1 when adaptation speeds the later epochs up, and below 1 for a job shorter than
   one epoch.)
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from shockwave.catalog import (
    ACCORDION_NEVER_ADAPTS,
    ORIGINAL_JOB_TEMPLATES,
    AdaptationMode,
    JobTemplate,
    gns_staircase,
    model_family,
)
from shockwave.errors import UsageError
from shockwave.limits import INT64_MAX
from shockwave.profile_rules import batch_size_schedule
from shockwave.throughputs import ThroughputTable

#: How modes are assigned: ``mixed`` (the original generator's mix) or ``static`` (every job).
AssignmentMode = Literal["mixed", "static"]
ASSIGNMENT_MODES: tuple[AssignmentMode, ...] = ("mixed", "static")
#: Most epochs a converted job gets (its epochs lengthen beyond it).
MAX_EPOCHS = 10_000
#: Shortest epoch the rule aims at, seconds: a job gets at most one epoch per millisecond.
MIN_EPOCH_SECONDS = 1e-3
#: Share of Accordion jobs in the ``mixed`` mode (the rest are GNS).
ACCORDION_SHARE = 0.5
#: An Accordion job shorter than this (seconds) becomes static (the original generator's rule).
ACCORDION_MIN_SECONDS = 1000.0
#: Profiles cached (of at most ``_CACHED_EPOCHS_MAX`` epochs: at most 16 MB in all).
_CACHE_ENTRIES = 1000
_CACHED_EPOCHS_MAX = 1000


_LOW_53_BITS = (1 << 53) - 1


def round_half_up(value: float) -> int:
    """``value`` rounded to an integer, halves up."""
    return math.floor(value + 0.5)


def job_uniforms(seed: int, source_id: str, purpose: str = "") -> tuple[float, float]:
    """Two uniform numbers in ``[0, 1)`` for a job, from the seed and its id (rule 1).

    ``purpose`` (empty for the assignment) gives another, independent pair: the conversion's
    ``--sample`` uses ``"sample"``.
    """
    text = f"{purpose}\0{seed}\0{source_id}" if purpose else f"{seed}\0{source_id}"
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    value = int.from_bytes(digest, "big")  # halves: value >> 64, value & (2**64 - 1)
    return (value >> 75) * 2.0**-53, ((value >> 11) & _LOW_53_BITS) * 2.0**-53


class Profile(NamedTuple):
    """What a converted job trains, and its per-epoch profile.

    Attributes:
        model, dataset: the model family and its dataset label.
        mode: the adaptation mode.
        batch_sizes: batch size of every epoch.
        epoch_seconds: duration of every epoch on the job's gang, seconds; they sum to the
            trace's run time.
        samples_per_epoch: the job's samples per epoch (the family's, times the scale ``k``).
    """

    model: str
    dataset: str
    mode: AdaptationMode
    batch_sizes: npt.NDArray[np.int64]
    epoch_seconds: npt.NDArray[np.float64]
    samples_per_epoch: int


class NoJobTypeError(UsageError, ValueError):
    """The throughput table holds no job type a gang size can take."""


@dataclass(frozen=True)
class _Candidate:
    template: JobTemplate
    reference_gang: int
    samples_per_epoch: int
    dataset: str


class JobAssigner:
    """Applies the module's rule with one throughput table, seed and mode.

    Args:
        throughputs: isolated throughputs of the model families (the bundled ``tacc`` by
            default in the conversion).
        seed: the seed of rule 1, an integer >= 0.
        mode: ``"mixed"`` or ``"static"``.
    """

    def __init__(
        self, throughputs: ThroughputTable, *, seed: int = 0, mode: AssignmentMode = "mixed"
    ) -> None:
        if mode not in ASSIGNMENT_MODES:
            raise ValueError(f"mode must be one of {ASSIGNMENT_MODES}, got {mode!r}")
        self.table = throughputs
        self.seed = seed
        self.mode: AssignmentMode = mode
        self._gangs: dict[tuple[str, int], list[int]] = {}
        for (model, batch_size, gang), thr in throughputs.entries.items():
            if thr > 0:
                self._gangs.setdefault((model, batch_size), []).append(gang)
        for gangs in self._gangs.values():
            gangs.sort()
        self._candidates: dict[int, tuple[_Candidate, ...]] = {}
        self._seconds: dict[tuple[str, int, int, int], float] = {}
        self._profiles: dict[
            tuple[str, str, int, int, int],
            tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], float],
        ] = {}

    def candidates(self, gang: int) -> tuple[_Candidate, ...]:
        """The job types a job of ``gang`` GPUs may take (rule 2), in the catalog's order.

        Raises:
            NoJobTypeError: if there is none in the table.
        """
        found = self._candidates.get(gang)
        if found is None:
            found = self._candidates[gang] = tuple(self._find_candidates(gang))
            if not found:
                raise NoJobTypeError(
                    f"the throughput table {self.table.source} has no job type of the catalog "
                    f"for a gang of {gang} GPUs (it needs one at {gang} GPUs or fewer)"
                )
        return found

    def _find_candidates(self, gang: int) -> list[_Candidate]:
        out = []
        for template in ORIGINAL_JOB_TEMPLATES:
            if gang > 1 and not template.launch.distributed:
                continue
            gangs = [
                w for w in self._gangs.get((template.model, template.batch_size), []) if w <= gang
            ]
            if not gangs:
                continue
            reference = gangs[-1]
            needed = self._reachable_batch_sizes(template, gang)
            if all(reference in self._gangs.get((template.model, b), []) for b in needed):
                family = model_family(template.model)
                out.append(
                    _Candidate(template, reference, family.samples_per_epoch, family.dataset)
                )
        return out

    def _reachable_batch_sizes(self, template: JobTemplate, gang: int) -> set[int]:
        """Batch sizes a job of this type may reach under the assigner's modes."""
        needed = {template.batch_size}
        if self.mode == "static":
            return needed
        family = model_family(template.model)
        if template.model not in ACCORDION_NEVER_ADAPTS:
            needed.add(family.max_batch_size)
        staircase = gns_staircase(template.model, template.batch_size, gang)
        if staircase is not None:
            needed.update(min(b, family.max_batch_size) for _, b in staircase.stages)
        return needed

    def profile(self, source_id: str, gang: int, duration: float) -> Profile:
        """The profile of a job of the trace (rules 1 to 6).

        Args:
            source_id: the trace's job id.
            gang: GPUs, >= 1.
            duration: the trace's run time, seconds, > 0.
        """
        u_type, u_mode = job_uniforms(self.seed, source_id)
        candidates = self._candidates.get(gang) or self.candidates(gang)
        chosen = candidates[min(int(u_type * len(candidates)), len(candidates) - 1)]
        model, initial = chosen.template.model, chosen.template.batch_size
        mode: AdaptationMode = "static"
        if self.mode == "mixed":
            mode = "accordion" if u_mode < ACCORDION_SHARE else "gns"
            if mode == "accordion" and duration < ACCORDION_MIN_SECONDS:
                mode = "static"
        first = self._epoch_seconds(model, initial, chosen.reference_gang, gang)
        epochs = _clamp_epochs(duration / first, duration)
        if mode == "static":  # one run: the fsum of rule 6 is the one product
            scale = duration / (epochs * first)
            batch_sizes = np.full(epochs, initial, dtype=np.int64)
            epoch_seconds = np.full(epochs, first * scale, dtype=np.float64)
        else:
            batch_sizes, natural, total = self._natural(
                mode, model, initial, gang, chosen.reference_gang, epochs
            )
            scale = duration / total
            epoch_seconds = natural * scale
        samples = chosen.samples_per_epoch * scale
        return Profile(
            model=model,
            dataset=chosen.dataset,
            mode=mode,
            batch_sizes=batch_sizes,
            epoch_seconds=epoch_seconds,
            samples_per_epoch=min(max(1, round_half_up(min(samples, 2.0**63))), INT64_MAX),
        )

    def _epoch_seconds(self, model: str, batch_size: int, reference: int, gang: int) -> float:
        """``t(b)`` of rule 4 (cached)."""
        key = (model, batch_size, reference, gang)
        seconds = self._seconds.get(key)
        if seconds is None:
            samples = model_family(model).samples_per_epoch
            thr = self.table.isolated(model, batch_size, reference)
            seconds = ((samples / batch_size) / thr) * reference / gang
            if len(self._seconds) >= _CACHE_ENTRIES:
                self._seconds.clear()
            self._seconds[key] = seconds
        return seconds

    def _natural(
        self, mode: AdaptationMode, model: str, initial: int, gang: int, reference: int, epochs: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], float]:
        """Batch sizes, unscaled epoch durations ``t(b_e)`` and their total ``T`` (rule 6:
        ``math.fsum`` over the distinct batch sizes ``b`` of (epochs at ``b``) x ``t(b)``) of
        an adapting job (cached)."""
        key = (mode, model, initial, gang, epochs)
        cached = self._profiles.get(key)
        if cached is not None:
            return cached
        batch_sizes = batch_size_schedule(mode, model, initial, gang, epochs)
        starts = np.flatnonzero(batch_sizes[1:] != batch_sizes[:-1]) + 1
        bounds = [0, *starts.tolist(), epochs]
        run_sizes = batch_sizes[bounds[:-1]].tolist()
        run_lengths = [b - a for a, b in itertools.pairwise(bounds)]
        per_size: dict[int, int] = {}
        for size, length in zip(run_sizes, run_lengths, strict=True):
            per_size[size] = per_size.get(size, 0) + length
        seconds = {b: self._epoch_seconds(model, b, reference, gang) for b in per_size}
        total = math.fsum(count * seconds[b] for b, count in per_size.items())
        natural = np.repeat(np.array([seconds[b] for b in run_sizes]), run_lengths)
        batch_sizes.setflags(write=False)
        natural.setflags(write=False)
        if epochs <= _CACHED_EPOCHS_MAX:  # short profiles recur; long ones rarely do
            if len(self._profiles) >= _CACHE_ENTRIES:
                self._profiles.clear()
            self._profiles[key] = (batch_sizes, natural, total)
        return batch_sizes, natural, total


def _clamp_epochs(value: float, duration: float) -> int:
    """``round(value)`` within ``[1, min(MAX_EPOCHS, floor(duration / MIN_EPOCH_SECONDS))]``."""
    most = duration / MIN_EPOCH_SECONDS
    if value + 0.5 < MAX_EPOCHS and value + 0.5 < most:  # the usual case: within both
        return max(math.floor(value + 0.5), 1)
    most_epochs = min(MAX_EPOCHS, math.floor(min(most, float(MAX_EPOCHS))))
    return max(min(round_half_up(min(value, float(MAX_EPOCHS))), most_epochs), 1)
