"""Configuration files: the one reader of the TOML and JSON documents behind ``--config`` and
sweep specs (``docs/simulator.md``, "Configuration files").

The rules, the same for every file:

* a file ends in ``.toml`` or ``.json`` and is UTF-8 text; TOML is read by the standard
  library's ``tomllib`` (Python 3.11 and newer) or by ``tomli`` (Python 3.10, a dependency
  there), JSON by ``json``; the document is a table (a JSON object);
* every table is checked against the keys it may hold: the fields of the dataclass it sets
  (:class:`~shockwave.scheduling.SimulationConfig` for ``[simulation]``,
  :class:`~shockwave.runtime.config.RuntimeConfig` for ``[runtime]``, a policy's parameters for
  a policy's table) less those set elsewhere; an unknown key is an error that names it, offers
  the closest known one and lists them all;
* each value is checked against the type of its field (a number for a float field, an integer
  for an integer field, one of the choices of a literal, ...), then the dataclass checks the
  values together;
* every problem raises a :class:`ConfigError` (a :class:`~shockwave.errors.DataError`, exit
  status 3) whose message names the file, the line where it can be found, and the key, as a
  dotted path (``traces[0].generate.jobs``)::

      sweep.toml:7: simulation.round_secnds: unknown simulation setting 'round_secnds' (did you
      mean 'round_seconds'? allowed: round_seconds, restart_penalty_seconds, ...)

:func:`read_config` reads a ``--config`` file (``simulate``, ``compare``, ``cluster run``);
:mod:`shockwave.sweep.spec` reads sweep specs with :func:`read_document` and the checks below.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import json
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Literal, TypeVar, Union

from shockwave.errors import DataError
from shockwave.heterogeneous.protocol import TypedAllocationPolicy
from shockwave.heterogeneous.registry import (
    GAVEL_NAMES,
    TYPED_POLICIES,
    make_typed_policy,
    resolve_typed_policy,
    typed_policy_parameters,
)
from shockwave.heterogeneous.simulate import HeterogeneousConfig
from shockwave.policies import (
    ORIGINAL_NAMES,
    POLICIES,
    make_policy,
    policy_parameters,
    resolve_policy_name,
)
from shockwave.runtime.config import RuntimeConfig
from shockwave.scheduling import SimulationConfig
from shockwave.scheduling.protocol import Policy

_T = TypeVar("_T")

#: The suffixes a configuration file may have.
SUFFIXES = (".toml", ".json")

#: A key's path in a document: table keys and array indices (``("traces", 0, "gpus")``).
KeyPath = tuple[str | int, ...]


class ConfigError(DataError, ValueError):
    """A configuration file (a ``--config`` file, a sweep spec) that cannot be read or is
    malformed.

    Args:
        path: the file.
        key: the key concerned, a dotted path (``"simulation.round_seconds"``) or a
            :data:`KeyPath`; empty for the whole file.
        what: what is wrong.
        line: the 1-based line of the key, where it is known.

    Attributes:
        key: the key as a dotted path (``""`` for the whole file); also ``field``.
    """

    def __init__(
        self,
        path: str | PathLike[str],
        key: str | KeyPath,
        what: str,
        *,
        line: int | None = None,
    ) -> None:
        self.key = key if isinstance(key, str) else key_name(key)
        super().__init__(what, path=path, line=line, field=self.key or None)


def key_name(key: KeyPath) -> str:
    """A key path as it is written in messages: ``traces[0].generate.jobs``."""
    out = ""
    for part in key:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
            out += f".{text}" if out else text
    return out


@dataclass(frozen=True)
class ConfigDocument:
    """A configuration file, read and parsed (:func:`read_document`).

    Attributes:
        path: the file.
        text: its content.
        data: the document (a table).
        error_class: the :class:`ConfigError` subclass its problems raise.
    """

    path: Path
    text: str
    data: dict[str, Any]
    error_class: type[ConfigError] = ConfigError

    def error(self, key: KeyPath, what: str) -> ConfigError:
        """The error for ``key`` (its line found where it can be)."""
        return self.error_class(self.path, key, what, line=self.line_of(key))

    def line_of(self, key: KeyPath) -> int | None:
        """The 1-based line where ``key`` is written, or where the closest enclosing table is
        (``None`` when not even that is known: a key of an inline table, the whole file)."""
        lines = self._lines
        for end in range(len(key), 0, -1):
            line = lines.get(key[:end])
            if line is not None:
                return line
        return None

    @property
    def _lines(self) -> dict[KeyPath, int]:
        cached: dict[KeyPath, int] | None = self.__dict__.get("_key_lines")
        if cached is None:
            try:
                if self.path.suffix == ".json":
                    cached = _json_key_lines(self.text)
                else:
                    cached = _toml_key_lines(self.text)
            except (ValueError, IndexError, RecursionError):  # best effort: no lines then
                cached = {}
            object.__setattr__(self, "_key_lines", cached)
        return cached


# ----------------------------------------------------------------------------- reading
def read_document(
    path: str | PathLike[str],
    *,
    what: str = "a configuration file",
    error_class: type[ConfigError] = ConfigError,
) -> ConfigDocument:
    """Read and parse a configuration file (the module's rules); ``what`` names it in the
    error for another suffix.

    Raises:
        ConfigError: (``error_class``) for a file that cannot be read, another suffix, text
            that is not UTF-8, TOML or JSON that does not parse, a document that is not a table.
    """
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise error_class(path, "", f"{what} must end in .toml or .json")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error_class(path, "", f"cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise error_class(
            path, "", f"not a text file ({what} must be UTF-8 TOML or JSON)"
        ) from None
    return parse_document(text, path, error_class=error_class)


def parse_document(
    text: str, path: str | PathLike[str], *, error_class: type[ConfigError] = ConfigError
) -> ConfigDocument:
    """Parse ``text``, the content of ``path`` (its suffix says TOML or JSON).

    Raises:
        ConfigError: (``error_class``) for text that does not parse or is not a table.
    """
    path = Path(path)
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise error_class(path, "", f"not valid JSON ({exc.msg})", line=exc.lineno) from None
        except RecursionError:
            raise error_class(path, "", "JSON nested too deeply") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise error_class(path, "", f"not valid JSON ({exc})") from None
    else:
        toml = _toml_module()
        try:
            data = toml.loads(text)
        except toml.TOMLDecodeError as exc:
            raise error_class(path, "", f"not valid TOML ({exc})", line=_toml_line(exc)) from None
        except RecursionError:
            raise error_class(path, "", "TOML nested too deeply") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise error_class(path, "", f"not valid TOML ({exc})") from None
    if not isinstance(data, dict):
        raise error_class(path, "", "the document must be a table (a JSON object)")
    return ConfigDocument(path, text, data, error_class)


def _toml_module() -> Any:
    try:
        return importlib.import_module("tomllib")  # the standard library from Python 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        return importlib.import_module("tomli")


def _toml_line(exc: Exception) -> int | None:
    line = getattr(exc, "lineno", None)  # tomllib from Python 3.14
    if isinstance(line, int):
        return line
    found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
    return int(found.group(1)) if found else None


# ------------------------------------------------------------------------------ checks
def table(document: ConfigDocument, key: KeyPath, value: Any, what: str) -> dict[str, Any]:
    """``value`` if it is a table, else the error (``what``: what the table holds)."""
    if not isinstance(value, dict):
        raise document.error(key, f"must be a table of {what}, got {_shown(value)}")
    return value


def check_keys(
    document: ConfigDocument,
    key: KeyPath,
    values: Mapping[str, Any],
    known: Sequence[str],
    *,
    what: str = "key",
    elsewhere: Mapping[str, str] | None = None,
) -> None:
    """Refuse the first key of ``values`` (in sorted order) that is not in ``known``, naming it,
    the closest known key, and all of them.

    Args:
        document: the file.
        key: the table's key path.
        values: the table.
        known: the keys it may hold.
        what: what a key is (``"simulation setting"``).
        elsewhere: keys that are set somewhere else, with where (``{"gpus": "--gpus"}``).
    """
    unknown = sorted(set(values) - set(known))
    if not unknown:
        return
    name = unknown[0]
    allowed = ", ".join(known) or "none"
    if elsewhere and name in elsewhere:
        hint = f"set by {elsewhere[name]}; allowed here: {allowed}"
    else:
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
        hint = (f"did you mean {close[0]!r}? " if close else "") + f"allowed: {allowed}"
    raise document.error((*key, name), f"unknown {what} {name!r} ({hint})")


def dataclass_keys(cls: type, *, exclude: Iterable[str] = ()) -> tuple[str, ...]:
    """The fields of dataclass ``cls`` that a table may set, in their order."""
    skip = set(exclude)
    return tuple(f.name for f in dataclasses.fields(cls) if f.init and f.name not in skip)


def check_value(document: ConfigDocument, key: KeyPath, value: Any, kind: Any) -> None:
    """Refuse ``value`` unless it fits ``kind``, a field's type (``float``, ``int | None``, a
    ``Literal``, ``Path``, ...) or a default value's type."""
    problem = _type_problem(value, kind)
    if problem is not None:
        raise document.error(key, f"{problem}, got {_shown(value)}")


def field_types(cls: type) -> dict[str, Any]:
    """The resolved type of each field of dataclass ``cls``."""
    return typing.get_type_hints(cls)


def _type_problem(value: Any, kind: Any) -> str | None:
    """What is wrong with ``value`` as a ``kind`` (``None``: nothing)."""
    origin = typing.get_origin(kind)
    if origin is Union or origin is types.UnionType:
        options = typing.get_args(kind)
        problems = [_type_problem(value, option) for option in options]
        if any(p is None for p in problems):
            return None
        return "must be " + " or ".join(p.removeprefix("must be ") for p in problems if p)
    if origin is Literal:
        choices = typing.get_args(kind)
        if value in choices and not isinstance(value, bool):
            return None
        return f"must be one of {', '.join(repr(c) for c in choices)}"
    if kind is type(None):
        return None if value is None else "must be null"
    if kind is bool:
        return None if isinstance(value, bool) else "must be true or false"
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else "must be an integer"
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an integer beyond the doubles
            finite = False
        return None if finite else "must be a finite number"
    if kind is str or kind is Path:
        return None if isinstance(value, str) else "must be a string"
    return None  # a type the reader does not know: the dataclass checks it


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an integer too long to write out
        return f"an integer of {value.bit_length()} bits"
    return text if len(text) <= 60 else text[:57] + "..."


# ------------------------------------------------------------------------ --config files
#: The ``[simulation]`` settings: every field of :class:`SimulationConfig` but those that have
#: their own option or key (the cluster size, the mechanics, the seed).
SIMULATION_KEYS = dataclass_keys(SimulationConfig, exclude=("gpus", "mechanics", "seed"))
#: The ``[simulation]`` settings of a typed cluster (``--cluster``): every field of
#: :class:`~shockwave.heterogeneous.simulate.HeterogeneousConfig` but those that have their own
#: option (the mechanics, the seed).
TYPED_SIMULATION_KEYS = dataclass_keys(HeterogeneousConfig, exclude=("mechanics", "seed"))
#: The ``[runtime]`` settings (``cluster run``): every field of :class:`RuntimeConfig` but the
#: cluster size and the paths of a run.
RUNTIME_KEYS = dataclass_keys(RuntimeConfig, exclude=("gpus", "run_dir", "workdir", "output"))

_SIMULATION_ELSEWHERE = {
    "gpus": "the command line's --gpus",
    "mechanics": "the command line's --mechanics",
    "seed": "the command line's --seed",
}
_TYPED_SIMULATION_ELSEWHERE = {k: v for k, v in _SIMULATION_ELSEWHERE.items() if k != "gpus"}
_RUNTIME_ELSEWHERE = {
    "gpus": "the command line's --gpus",
    "run_dir": "the command line's --run-dir",
    "output": "the command line's --output",
    "workdir": "the workload file's directory",
}


@dataclass(frozen=True)
class ConfigFile:
    """A ``--config`` file, checked: its ``[simulation]`` and ``[runtime]`` settings and one
    table of parameters per policy (by its canonical name).

    Attributes:
        document: the file.
        simulation: the ``[simulation]`` settings (:data:`SIMULATION_KEYS`;
            :data:`TYPED_SIMULATION_KEYS` for a typed cluster).
        runtime: the ``[runtime]`` settings (:data:`RUNTIME_KEYS`).
        policies: each policy's parameters, as written (each key checked, its type too).
        tables: the key each table was written under (a policy may use its original name).
    """

    document: ConfigDocument
    simulation: Mapping[str, Any]
    runtime: Mapping[str, Any]
    policies: Mapping[str, Mapping[str, Any]]
    tables: Mapping[str, str]

    @property
    def path(self) -> Path:
        """The file."""
        return self.document.path

    def error(self, table_name: str, what: str) -> ConfigError:
        """The error for the table ``table_name`` (``"simulation"``, a policy's name)."""
        return self.document.error((self.tables.get(table_name, table_name),), what)

    def _made(self, table_name: str, make: Callable[[], _T]) -> _T:
        """``make()``, or the error naming the table ``table_name`` when its values are refused
        together (a ``ValueError`` or ``TypeError`` of the dataclass or the policy)."""
        try:
            return make()
        except (ValueError, TypeError) as exc:
            raise self.error(table_name, str(exc)) from None

    def notes(self, names: Sequence[str]) -> list[str]:
        """What a simulation of policies ``names`` does not use of this file: the parameters of
        other policies, a ``[runtime]`` table (``simulate`` and ``compare`` print them)."""
        notes = []
        unused = sorted(set(self.policies) - set(names))
        if unused:
            notes.append(f"note: --config has parameters for {', '.join(unused)}, not run here")
        if self.runtime:
            notes.append("note: --config's [runtime] settings are for real runs (cluster run)")
        return notes

    def simulation_config(self, **settings: Any) -> SimulationConfig:
        """:class:`SimulationConfig` with ``settings`` and this file's ``[simulation]``.

        Raises:
            ConfigError: naming ``[simulation]`` if the settings are refused together.
        """
        return self._made("simulation", lambda: SimulationConfig(**settings, **self.simulation))

    def runtime_config(self, **settings: Any) -> RuntimeConfig:
        """:class:`RuntimeConfig` with ``settings`` and this file's ``[runtime]``.

        Raises:
            ConfigError: naming ``[runtime]`` if the settings are refused together.
        """
        return self._made("runtime", lambda: RuntimeConfig(**settings, **self.runtime))

    def policy(self, name: str) -> Policy:
        """The built-in policy ``name`` (canonical) with its parameters from this file.

        Raises:
            ConfigError: naming the policy's table if the policy refuses them.
        """
        return self._made(name, lambda: make_policy(name, self.policies.get(name)))

    def heterogeneous_config(self, **settings: Any) -> HeterogeneousConfig:
        """:class:`~shockwave.heterogeneous.simulate.HeterogeneousConfig` with ``settings`` and
        this file's ``[simulation]`` (a typed cluster's file).

        Raises:
            ConfigError: naming ``[simulation]`` if the settings are refused together.
        """
        return self._made("simulation", lambda: HeterogeneousConfig(**settings, **self.simulation))

    def typed_policy(self, name: str, seed: int) -> TypedAllocationPolicy:
        """The typed policy ``name`` (canonical) with its parameters from this file.

        Raises:
            ConfigError: naming the policy's table if the policy refuses them.
        """
        return self._made(name, lambda: make_typed_policy(name, seed, self.policies.get(name)))


def read_config(path: str | PathLike[str], *, typed: bool = False) -> ConfigFile:
    """Read and check a ``--config`` file (the module's rules): tables ``[simulation]``,
    ``[runtime]`` and one per policy (by its name or the original's; with ``typed``, for a
    typed cluster: the typed policies and :data:`TYPED_SIMULATION_KEYS`).

    Raises:
        ConfigError: naming the file, the line and the key.
    """
    document = read_document(path, what="a --config file")
    simulation: dict[str, Any] = {}
    runtime: dict[str, Any] = {}
    policies: dict[str, dict[str, Any]] = {}
    tables: dict[str, str] = {}
    for name, value in document.data.items():
        if name in ("simulation", "runtime"):
            values = table(document, (name,), value, "settings")
            cls, keys, elsewhere = (
                (
                    (HeterogeneousConfig, TYPED_SIMULATION_KEYS, _TYPED_SIMULATION_ELSEWHERE)
                    if typed
                    else (SimulationConfig, SIMULATION_KEYS, _SIMULATION_ELSEWHERE)
                )
                if name == "simulation"
                else (RuntimeConfig, RUNTIME_KEYS, _RUNTIME_ELSEWHERE)
            )
            checked = settings_table(
                document, (name,), values, cls, keys, what=f"{name} setting", elsewhere=elsewhere
            )
            (simulation if name == "simulation" else runtime).update(checked)
            tables[name] = name
            continue
        values = table(document, (name,), value, "parameters")
        policy = policy_name(document, (name,), name, typed=typed)
        if policy in policies:
            raise document.error(
                (name,), f"the parameters of {policy!r} are also in [{tables[policy]}]"
            )
        check_policy_keys(document, (name,), policy, values, typed=typed)
        for key, setting in values.items():
            check_policy_value(document, (name, key), policy, key, setting, typed=typed)
        policies[policy] = dict(values)
        tables[policy] = name
    return ConfigFile(document, simulation, runtime, policies, tables)


def settings_table(
    document: ConfigDocument,
    key: KeyPath,
    values: Mapping[str, Any],
    cls: type,
    keys: Sequence[str],
    *,
    what: str,
    elsewhere: Mapping[str, str] | None = None,
    swept: bool = False,
) -> dict[str, Any]:
    """A table of settings of dataclass ``cls``: its keys checked against ``keys`` and each
    value against its field's type (``swept``: a value may be a non-empty list of values, each
    checked)."""
    check_keys(document, key, values, keys, what=what, elsewhere=elsewhere)
    kinds = field_types(cls)
    for name, value in values.items():
        for at, one in _each(document, (*key, name), value, swept):
            check_value(document, at, one, kinds[name])
    return dict(values)


def policy_name(document: ConfigDocument, key: KeyPath, name: Any, *, typed: bool = False) -> str:
    """The built-in policy called ``name`` (ours or the original's name; with ``typed``, the
    typed policy: ours or Gavel's), or the error."""
    if not isinstance(name, str):
        raise document.error(key, f"must be a policy name, got {_shown(name)}")
    try:
        return resolve_typed_policy(name) if typed else resolve_policy_name(name)
    except ValueError as exc:
        names = [*TYPED_POLICIES, *GAVEL_NAMES] if typed else [*POLICIES, *ORIGINAL_NAMES.values()]
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise document.error(key, f"{exc}{hint}") from None


def check_policy_keys(
    document: ConfigDocument,
    key: KeyPath,
    policy: str,
    values: Mapping[str, Any],
    *,
    typed: bool = False,
) -> None:
    """Refuse a parameter that policy ``policy`` (a typed one with ``typed``) does not have
    (named, with the closest)."""
    known = typed_policy_parameters(policy) if typed else policy_parameters(policy)
    unknown = sorted(set(values) - set(known))
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise document.error(
            (*key, name),
            f"policy {policy!r} has no parameter {name!r} ({hint}its parameters: "
            f"{', '.join(known) or 'none'})",
        )


def check_policy_value(
    document: ConfigDocument,
    key: KeyPath,
    policy: str,
    name: str,
    value: Any,
    *,
    typed: bool = False,
) -> None:
    """Refuse a value of the wrong type for parameter ``name`` of ``policy`` (a typed one with
    ``typed``; the type of its default; an integer is a number)."""
    default = (typed_policy_parameters(policy) if typed else policy_parameters(policy))[name]
    check_value(document, key, value, type(default))


def _each(
    document: ConfigDocument, key: KeyPath, value: Any, swept: bool
) -> list[tuple[KeyPath, Any]]:
    if not swept or not isinstance(value, list):
        return [(key, value)]
    if not value:
        raise document.error(key, "an empty list sweeps nothing")
    return [((*key, index), one) for index, one in enumerate(value)]


# ----------------------------------------------------------------------- where keys are
_BARE = r"[A-Za-z0-9_-]+"
_QUOTED = r'"(?:[^"\\]|\\.)*"' + r"|'[^']*'"
_KEY = rf"(?:{_BARE}|{_QUOTED})"
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_KEY_LINE = re.compile(rf"^\s*({_DOTTED})\s*=")
_PART = re.compile(_KEY)


def _key_parts(dotted: str) -> list[str]:
    parts = []
    for match in _PART.finditer(dotted):
        text = match.group(0)
        if text.startswith('"'):
            text = json.loads(text)
        elif text.startswith("'"):
            text = text[1:-1]
        parts.append(text)
    return parts


def _toml_key_lines(text: str) -> dict[KeyPath, int]:
    """The line of every table header and key of a TOML document (a scan of its lines that
    knows tables, arrays of tables, dotted keys and multi-line strings; keys inside inline
    tables are not found)."""
    lines: dict[KeyPath, int] = {}
    arrays: dict[tuple[str, ...], int] = {}  # the latest index of each array of tables
    current: KeyPath = ()
    in_string: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:  # inside a multi-line string
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        header = _HEADER.match(line)
        if header is not None:
            names = _key_parts(header.group(2))
            is_array = header.group(1) == "[["
            resolved: list[str | int] = []
            for depth, name in enumerate(names, start=1):
                resolved.append(name)
                prefix = tuple(names[:depth])
                if depth == len(names) and is_array:
                    arrays[prefix] = arrays.get(prefix, -1) + 1
                    for other in [a for a in arrays if a[: len(prefix)] == prefix and a != prefix]:
                        del arrays[other]  # a new element: its own arrays start again
                    resolved.append(arrays[prefix])
                elif prefix in arrays:
                    resolved.append(arrays[prefix])
            current = tuple(resolved)
            for end in range(1, len(current) + 1):  # and its enclosing tables
                lines.setdefault(current[:end], number)
            continue
        found = _KEY_LINE.match(line)
        if found is not None:
            lines.setdefault((*current, *_key_parts(found.group(1))), number)
            rest = line[found.end() :]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2 == 1:
                    in_string = quote
                    break
    return lines


def _json_key_lines(text: str) -> dict[KeyPath, int]:
    """The line of every key and array element of a JSON document (a scan of its tokens; the
    document has been parsed already)."""
    lines: dict[KeyPath, int] = {}
    # each open container: [is_object, the current key or index, expecting a key or value]
    stack: list[list[Any]] = []
    line, i, n = 1, 0, len(text)

    def start_value() -> None:
        if stack and not stack[-1][0] and stack[-1][2]:  # an array's next element
            stack[-1][1] += 1
            stack[-1][2] = False
            lines.setdefault(tuple(entry[1] for entry in stack), line)

    while i < n:
        char = text[i]
        if char == "\n":
            line += 1
        elif char == '"':
            end = i + 1
            while text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            if stack and stack[-1][0] and stack[-1][2]:  # an object's key
                stack[-1][1] = json.loads(text[i : end + 1])
                stack[-1][2] = False
                lines.setdefault(tuple(entry[1] for entry in stack), line)
            else:
                start_value()
            i = end
        elif char in "{[":
            start_value()
            stack.append([char == "{", None if char == "{" else -1, True])
        elif char in "}]":
            stack.pop()
        elif char == ",":
            stack[-1][2] = True
        elif not char.isspace() and char != ":":
            start_value()
        i += 1
    return lines
