"""Production cluster traces: Microsoft Philly, SenseTime Helios, Alibaba PAI and Tiresias CSV.

:func:`convert_production` turns one of these public traces into a native workload
(``shockwave trace convert --from SOURCE PATH -o OUT.jsonl``); :func:`read_production` gives the
same workload in memory. The rules (which jobs are kept, arrivals, gang sizes, run times, and the
seeded assignment of model family, mode and epochs) are in ``docs/production_traces.md`` and in
the modules:

* :mod:`~shockwave.traces.production.philly`, :mod:`~shockwave.traces.production.helios`,
  :mod:`~shockwave.traces.production.pai`, :mod:`~shockwave.traces.production.tiresias`: the
  streaming readers, one :class:`~shockwave.traces.production.records.SourceJob` per job;
* :mod:`~shockwave.traces.production.assignment`: the seeded profile rule;
* :mod:`~shockwave.traces.production.options`: filters and settings;
* :mod:`~shockwave.traces.production.convert`: the two streaming passes;
* :mod:`~shockwave.traces.production.synthetic`: a Helios-schema file of any size, for
  benchmarks and tests.
"""

from __future__ import annotations

from shockwave.traces.production.assignment import (
    ASSIGNMENT_MODES,
    MAX_EPOCHS,
    JobAssigner,
    Profile,
    job_uniforms,
)
from shockwave.traces.production.convert import (
    SOURCES,
    ConversionReport,
    convert_production,
    open_source,
    read_production,
    render_conversion,
)
from shockwave.traces.production.options import (
    DROP_REASONS,
    ConversionOptionError,
    ConversionOptions,
)
from shockwave.traces.production.records import SourceJob, SourceSchema

__all__ = [
    "ASSIGNMENT_MODES",
    "DROP_REASONS",
    "MAX_EPOCHS",
    "SOURCES",
    "ConversionOptionError",
    "ConversionOptions",
    "ConversionReport",
    "JobAssigner",
    "Profile",
    "SourceJob",
    "SourceSchema",
    "convert_production",
    "job_uniforms",
    "open_source",
    "read_production",
    "render_conversion",
]
