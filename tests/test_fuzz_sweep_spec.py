"""Fuzzing the sweep spec reader: random TOML documents built from the spec's keys and from
random keys and values (numbers past 64 bits, NaN, infinities, text, nested lists and tables),
and random text. Reading one must give a spec whose cells can be listed, or a ``SpecError``
naming the file: never another exception (``docs/reliability.md``). In CI a few dozen
fixed examples; ``HYPOTHESIS_PROFILE=fuzz`` runs the campaign."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from shockwave.policies import policy_parameters
from shockwave.sweep.spec import GENERATE_KEYS, TOP_KEYS, TRACE_KEYS, SpecError, parse_spec
from tests.fuzzing import any_float, any_int, fuzz

SPEC = Path("/nonexistent/spec.toml")
POLICIES = ["shockwave", "gavel", "themis", "allox", "mst", "ossp", "gandiva-fair", "fifo"]
#: Every policy's parameters, and one that none has.
PARAMETERS = sorted({k for p in POLICIES for k in policy_parameters(p)} | {"x"})
KEYS = [*TOP_KEYS, *TRACE_KEYS, *GENERATE_KEYS, *PARAMETERS, "round_seconds", "max_rounds"]

scalars = st.one_of(
    any_int,
    any_float,
    st.booleans(),
    st.text(max_size=6),
    st.sampled_from([*POLICIES, "exact", "gavel", "tacc", "wisr", "markov", "milp"]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=10,
)


def toml_value(value: Any) -> str:
    """``value`` as a TOML inline value (integers past 64 bits are left invalid on purpose)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def _lines(table: dict[str, Any]) -> list[str]:
    return [f"{json.dumps(k)} = {toml_value(v)}" for k, v in table.items()]


def _sane(value: Any) -> Any:
    """A value of the default's kind, near it (``value`` is a parameter's default)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(max(1, value // 2), value * 2 + 1)
    if isinstance(value, float):
        return st.floats(0.0, 2 * value + 1)
    return st.just(value)


@st.composite
def documents(draw: Any) -> str:
    """A spec: mostly well formed (so that cells are listed), with random keys and values
    mixed in."""
    corrupt = draw(st.integers(0, 3)) == 0  # a quarter of the documents take random values
    policies = draw(st.lists(st.sampled_from(POLICIES), min_size=1, max_size=3, unique=True))
    top: dict[str, Any] = {
        "policies": draw(values) if corrupt and draw(st.booleans()) else policies
    }
    if draw(st.booleans()):
        top["mechanics"] = draw(st.sampled_from([["exact"], ["gavel"], ["exact", "gavel"]]))
    if draw(st.booleans()):
        top["seeds"] = draw(st.lists(st.integers(0, 5), min_size=1, max_size=2, unique=True))
    if corrupt:
        top.update(draw(st.dictionaries(st.sampled_from((*TOP_KEYS, "bogus")), values, max_size=2)))
    top = {k: v for k, v in top.items() if k not in ("traces", "params", "simulation")}
    lines = _lines(top)
    for _ in range(draw(st.integers(1 if not corrupt else 0, 2))):
        generate: dict[str, Any] = {
            "jobs": draw(st.integers(1, 30)),
            "gpus": draw(st.sampled_from([8, 16])),
            "seed": draw(st.lists(st.integers(0, 9), min_size=1, max_size=2, unique=True)),
        }
        table: dict[str, Any] = {"generate": generate}
        if corrupt:
            generate.update(
                draw(
                    st.dictionaries(
                        st.sampled_from(GENERATE_KEYS), st.one_of(any_float, values), max_size=2
                    )
                )
            )
            table.update(draw(st.dictionaries(st.sampled_from(TRACE_KEYS), values, max_size=1)))
        lines += ["[[traces]]", *_lines(table)]
    for policy in policies:
        known = (
            policy_parameters(policy)
            if policy != "shockwave"
            else {"planning_rounds": 20, "makespan_weight": 0.5, "replan_period": 1}
        )
        if not known or not draw(st.booleans()):
            continue
        grid = {
            k: draw(st.lists(_sane(v), min_size=1, max_size=2))
            for k, v in known.items()
            if draw(st.booleans())
        }
        if corrupt:
            grid.update(
                draw(
                    st.dictionaries(
                        st.sampled_from(PARAMETERS), st.one_of(any_float, values), max_size=2
                    )
                )
            )
        lines += [f"[params.{json.dumps(policy)}]", *_lines(grid)]
    if draw(st.booleans()):
        settings = {
            "round_seconds": draw(
                st.lists(st.sampled_from([60.0, 120, 300]), min_size=1, max_size=2, unique=True)
            )
        }
        if corrupt:
            settings.update(
                draw(
                    st.dictionaries(
                        st.sampled_from(["round_seconds", "max_rounds", "throughput_noise", "x"]),
                        values,
                        max_size=2,
                    )
                )
            )
        lines += ["[simulation]", *_lines(settings)]
    return "\n".join(lines) + "\n"


def _check(text: str) -> None:
    try:
        spec = parse_spec(text, SPEC)
    except SpecError as exc:
        assert str(exc).startswith(str(SPEC))
        return
    cells = spec.cells()
    assert cells and len({c.key for c in cells}) == len(cells)


@fuzz(40)
@given(documents())
def test_a_random_spec_is_read_or_refused_with_a_spec_error(text: str) -> None:
    _check(text)


@fuzz(20)
@given(st.text(max_size=200))
def test_random_text_is_read_or_refused_with_a_spec_error(text: str) -> None:
    _check(text)
