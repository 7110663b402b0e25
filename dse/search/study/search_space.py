"""Search spaces: which design knobs a study varies, over what ranges (``search_spaces/*.toml``).

A space names a base system (preset or file) and parameters keyed by the dotted system key they set
(``node.accelerators``, ``nodes``, ``network.oversubscription``...). Parameter types:

- ``int`` (``low``, ``high``, optional ``step``, ``log``), ``float`` (``low``, ``high``, optional
  ``log``), ``categorical`` (``choices``), ``ordinal`` (ordered ``choices``, searched by index so
  samplers can exploit the order), and fixed values (``[fixed]``).
- ``when = { "node.scaleup" = ["ring", "switch"] }``: the parameter exists only when another
  parameter took one of those values; otherwise the base system's value stands.
- ``system`` (categorical, choices are system presets or files): the base system itself, chosen per
  design, so whole vendor nodes compete as sold (their CPUs, NICs and fabrics) while the other
  parameters vary on top of each. Every preset a choice names is then a baseline of the study.
- ``workload.global_batch`` (and the other fields of
  :data:`~dse.model.workload.SEARCHABLE_FIELDS`): a workload field, set on the study's workload
  per design (:func:`dse.search.study.encoding.design_workload`) rather than on the system. Batch is
  worth searching with ``time_to_train_s``: a larger batch runs faster but needs more samples to
  converge (:mod:`dse.model.convergence`).

>>> space = load_space("zion-node")
>>> "node.accelerators" in space.parameters
True
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from dse.errors import DseInputError
from dse.limits import MAX_CHOICES, MAX_GRID_VALUES
from dse.model.catalog import Catalog
from dse.model.system import (
    ConstraintsSpec,
    SystemSpec,
    load_system_spec,
    system_spec_from_mapping,
)
from dse.model.workload import PER_DEVICE_FIELDS, searchable_value, workload_presets
from dse.records import (
    SPACE,
    SYSTEM,
    NamedFile,
    apply_override,
    brief,
    from_mapping,
    named_beside,
    named_file,
    read_named,
    read_toml,
)

ParamType = Literal["int", "float", "categorical", "ordinal"]
Scalar = int | float | str | bool
SYSTEM_PARAM = "system"
"""The parameter that chooses the base system per design (a categorical over system presets)."""
WORKLOAD_PREFIX = "workload."
"""Parameters named ``workload.FIELD`` set a workload field, not a system key."""
"""``search_spaces/`` of the checkout (spaces are project files, not package data)."""
SYSTEM_LABEL = "system "
"""How a study's record of a system is labelled (``system dgx-h100``: the name the space gives)."""


_SET_FIELD_BOUNDS = {"max": float("inf")}
"""A range's ends are bounded by the field they set (checked on the base system, naming the
parameter), not by :data:`dse.limits.MAX_QUANTITY`."""


@dataclass(frozen=True, slots=True)
class _ParamFile:
    type: ParamType
    low: float | None = field(default=None, metadata=_SET_FIELD_BOUNDS)
    high: float | None = field(default=None, metadata=_SET_FIELD_BOUNDS)
    step: float | None = field(default=None, metadata=_SET_FIELD_BOUNDS)
    log: bool = False
    choices: tuple[Any, ...] | None = None
    when: dict[str, tuple[Any, ...]] | None = None
    description: str = ""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One searched knob."""

    name: str
    type: ParamType
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    choices: tuple[Scalar, ...] = ()
    when: dict[str, tuple[Scalar, ...]] = field(default_factory=dict)
    description: str = ""

    def contains(self, value: Any) -> bool:
        """Whether ``value`` lies in this parameter's domain."""
        if self.type in ("categorical", "ordinal"):
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        assert self.low is not None and self.high is not None
        if self.type == "int" and not float(value).is_integer():
            return False
        return self.low <= value <= self.high

    def grid(self) -> tuple[Scalar, ...]:
        """Every value of a discrete parameter (ints with their step), for grid search."""
        if self.type in ("categorical", "ordinal"):
            return self.choices
        if self.type == "int":
            assert self.low is not None and self.high is not None
            step = int(self.step or 1)
            return tuple(range(int(self.low), int(self.high) + 1, step))
        raise DseInputError("space", self.name, "a float parameter has no grid; give it choices")


@dataclass(frozen=True, slots=True)
class SearchSpace:
    """A named set of parameters over a base system."""

    name: str
    base_system: str
    parameters: dict[str, Parameter]
    fixed: dict[str, Scalar]
    description: str = ""
    source: str = ""
    systems: dict[str, NamedFile] = field(default_factory=dict, compare=False)
    """Every system the space names (its base system, the ``system`` parameter's choices), read
    where the space file resolves them (:func:`dse.records.named_beside`), by name."""

    def base_spec(self) -> SystemSpec:
        """The base system spec with the fixed values applied."""
        return self.system_spec(self.base_system, tuple(self.fixed.items()))

    def system_table(self, base: str) -> tuple[dict[str, Any], str]:
        """The table of base system ``base`` as this space read it, and its name in errors (a
        name the space does not hold is looked up as on the command line)."""
        named = self.systems.get(base)
        if named is None:
            from dse.model.system import read_system_data

            return read_system_data(base)
        return named.table(), named.source

    def system_spec(self, base: str, overrides: tuple[tuple[str, Any], ...] = ()) -> SystemSpec:
        """Base system ``base`` (as this space read it) with ``(dotted.key, value)`` overrides."""
        if base not in self.systems:
            return load_system_spec(base, overrides)
        data, source = self.system_table(base)
        for key, value in overrides:
            data = apply_override(data, key, value)
        return system_spec_from_mapping(data, source)

    def base_for(self, params: Mapping[str, Any]) -> str:
        """The base system of a design: its ``system`` parameter when the space has one."""
        return str(params.get(SYSTEM_PARAM, self.base_system))

    def bases(self) -> tuple[str, ...]:
        """Every base system a design of this space may start from."""
        p = self.parameters.get(SYSTEM_PARAM)
        return tuple(str(c) for c in p.choices) if p is not None else (self.base_system,)

    def overrides(self, params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        """System overrides for a trial's parameters (ordinals already decoded), fixed ones first."""
        return tuple(self.fixed.items()) + tuple(
            (k, params[k]) for k in self.parameters
            if k in params and k != SYSTEM_PARAM and not is_workload_param(k))

    def workload_overrides(self, params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        """Workload fields a design sets (``workload.global_batch`` -> ``global_batch``)."""
        return tuple((k.removeprefix(WORKLOAD_PREFIX), params[k]) for k in self.parameters
                     if k in params and is_workload_param(k))

    def active(self, name: str, chosen: Mapping[str, Any]) -> bool:
        """Whether parameter ``name`` exists given the values chosen so far."""
        p = self.parameters[name]
        return all(chosen.get(k) in values for k, values in p.when.items())

    def is_discrete(self) -> bool:
        """True when every parameter has a finite grid (no float ranges)."""
        return all(p.type != "float" for p in self.parameters.values())

    def size(self) -> int:
        """Number of designs of a discrete space (conditions ignored: an upper bound)."""
        n = 1
        for p in self.parameters.values():
            n *= len(p.grid())
        return n

    def to_dict(self) -> dict[str, Any]:
        """A plain description (recorded as a study attribute, compared on resume)."""
        return {
            "name": self.name,
            "base_system": self.base_system,
            "fixed": dict(self.fixed),
            "parameters": {
                k: {"type": p.type, "low": p.low, "high": p.high, "step": p.step, "log": p.log,
                    "choices": list(p.choices), "when": {c: list(v) for c, v in p.when.items()}}
                for k, p in self.parameters.items()
            },
        }


@dataclass(frozen=True, slots=True)
class _SpaceFile:
    name: str
    base_system: str
    parameters: dict[str, _ParamFile]
    fixed: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = ""


def _check_param(name: str, p: _ParamFile, source: str) -> Parameter:
    key = f"parameters.{name}"
    if p.type in ("int", "float"):
        if p.low is None or p.high is None:
            raise DseInputError(source, key, f"a {p.type} parameter needs low and high")
        if p.low > p.high:
            raise DseInputError(source, f"{key}.low", f"low {p.low} is greater than high {p.high}")
        if p.log and p.low <= 0:
            raise DseInputError(source, f"{key}.low", "a log-scale parameter needs low > 0")
        if p.choices is not None:
            raise DseInputError(source, f"{key}.choices", f"a {p.type} parameter takes low/high")
        if p.type == "int" and not (float(p.low).is_integer() and float(p.high).is_integer()):
            raise DseInputError(source, key, "an int parameter needs integer low and high")
        if p.step is not None and p.step <= 0:
            raise DseInputError(source, f"{key}.step", "must be positive")
        if p.type == "int":
            _check_int_grid(p.low, p.high, p.step, source, key)
        return Parameter(name, p.type, float(p.low), float(p.high), p.step, p.log, (),
                         dict(p.when or {}), p.description)
    if not p.choices:
        raise DseInputError(source, f"{key}.choices", f"a {p.type} parameter needs a non-empty choice list")
    if len(p.choices) > MAX_CHOICES:
        raise DseInputError(source, f"{key}.choices", f"has {len(p.choices):,} choices; at most "
                            f"{MAX_CHOICES:,} are supported (a range of integers is an int "
                            "parameter with low, high and step)")
    if len(set(map(repr, p.choices))) != len(p.choices):
        raise DseInputError(source, f"{key}.choices", "choices must be distinct")
    for c in p.choices:
        if not isinstance(c, int | float | str | bool):
            raise DseInputError(source, f"{key}.choices", f"choices must be scalars, got {c!r}")
    if p.type == "ordinal" and any(isinstance(c, str) for c in p.choices) and not all(
        isinstance(c, str) for c in p.choices
    ):
        raise DseInputError(source, f"{key}.choices", "ordinal choices must be all numbers or all strings")
    if p.low is not None or p.high is not None:
        raise DseInputError(source, key, f"a {p.type} parameter takes choices, not low/high")
    return Parameter(name, p.type, None, None, None, False, tuple(p.choices), dict(p.when or {}),
                     p.description)


def _check_int_grid(low: float, high: float, step: float | None, source: str, key: str) -> None:
    """An int parameter's step is a whole number and its grid at most
    :data:`~dse.limits.MAX_GRID_VALUES` values (grid and line searches list them)."""
    if step is not None and not float(step).is_integer():
        raise DseInputError(source, f"{key}.step", f"an int parameter needs a whole step, got {step}")
    values = math.floor((high - low) / (step or 1)) + 1
    if values > MAX_GRID_VALUES:
        raise DseInputError(source, key, f"low {low:g} to high {high:g} in steps of {step or 1:g} "
                            f"is {values:,} values; at most {MAX_GRID_VALUES:,} are supported "
                            "(raise step or narrow the range)")


def space_from_mapping(data: dict[str, Any], source: str, naming: Path | None = None) -> SearchSpace:
    """Validate a search-space table: types, ranges, conditions and that every key is a real
    system key (checked by applying the space's extreme values to the base system). The systems
    it names are read beside the file ``naming`` (the space's own file; none: as on the command
    line), then among the packaged presets."""
    raw = from_mapping(_SpaceFile, data, source)
    params = {name: _check_param(name, p, source) for name, p in raw.parameters.items()}
    for name, p in params.items():
        for cond, values in p.when.items():
            if cond not in params:
                raise DseInputError(source, f"parameters.{name}.when",
                                    f"condition on {cond!r}, which is not a parameter of this space")
            for v in values:
                if not params[cond].contains(v):
                    raise DseInputError(source, f"parameters.{name}.when",
                                        f"{v!r} is not a value of {cond!r}")
    space = SearchSpace(raw.name, raw.base_system, params, dict(raw.fixed), raw.description, raw.source)
    space = dataclasses.replace(space, systems=_read_systems(space, source, naming))
    _check_keys(space, source)
    return space


def _read_systems(space: SearchSpace, source: str, naming: Path | None) -> dict[str, NamedFile]:
    """Read every system ``space`` names, beside ``naming``; an unknown one fails naming the key."""
    key = f"parameters.{SYSTEM_PARAM}" if SYSTEM_PARAM in space.parameters else "base_system"
    out: dict[str, NamedFile] = {}
    for base in dict.fromkeys((space.base_system, *space.bases())):
        try:
            out[base] = read_named(named_beside(base, SYSTEM, naming), SYSTEM)
        except DseInputError as exc:
            raise DseInputError(source, key, f"{brief(base)}: {exc.message or exc}") from None
    return out


def is_workload_param(name: str) -> bool:
    """Whether a parameter sets a workload field (``workload.global_batch``)."""
    return name.startswith(WORKLOAD_PREFIX)


def _check_workload_param(p: Parameter, source: str) -> None:
    """Every extreme value of a workload parameter is a valid value of its workload field."""
    for value in probe_values(p):
        try:
            searchable_value(p.name.removeprefix(WORKLOAD_PREFIX), value, source)
        except DseInputError as exc:
            raise DseInputError(source, f"parameters.{p.name}", exc.message) from None


def _check_keys(space: SearchSpace, source: str) -> None:
    for name in PER_DEVICE_FIELDS:
        field_name = PER_DEVICE_FIELDS[name][0]
        if {WORKLOAD_PREFIX + name, WORKLOAD_PREFIX + field_name} <= set(space.parameters):
            raise DseInputError(source, f"parameters.{WORKLOAD_PREFIX}{name}", "sets "
                                f"{field_name} too: search {WORKLOAD_PREFIX}{field_name} or it")
    system = space.parameters.get(SYSTEM_PARAM)
    if system is not None and (system.type != "categorical" or system.when
                               or not all(isinstance(c, str) for c in system.choices)):
        raise DseInputError(source, f"parameters.{SYSTEM_PARAM}", "the base-system parameter must "
                            "be categorical over system presets (or files), without `when`")
    for base in space.bases():
        try:
            space.system_spec(base, tuple(space.fixed.items()))
        except DseInputError as exc:
            # The system file and its key, not just the message: "required key is missing" alone
            # names neither the file nor the key.
            if system is None:
                key = f"fixed ({exc.key})" if exc.key in space.fixed else "base_system"
                raise DseInputError(source, key, str(exc)) from None
            raise DseInputError(source, f"parameters.{SYSTEM_PARAM}",
                                f"choice {base!r}: {exc}") from None
        for name, p in space.parameters.items():
            if name == SYSTEM_PARAM or base not in p.when.get(SYSTEM_PARAM, (base,)):
                continue  # a parameter that only exists on other base systems (racks on an NVL72)
            if is_workload_param(name):
                _check_workload_param(p, source)
                continue
            for value in probe_values(p):
                try:
                    space.system_spec(base, ((name, value),))
                except DseInputError as exc:
                    raise DseInputError(source, f"parameters.{name}", exc.message) from None


def with_recorded_systems(space: SearchSpace, recorded: str) -> SearchSpace:
    """``space`` with the systems a study recorded (``recorded``: its ``dse:contents``) in place
    of what the files hold now, so the read-only commands rebuild designs on the machines they
    were scored on. A system the study did not record keeps the file's."""
    if not recorded:
        return space
    stored: dict[str, dict[str, str]] = json.loads(recorded)
    systems = dict(space.systems)
    for name, named in space.systems.items():
        was = stored.get(SYSTEM_LABEL + name)
        if was is not None and was["sha256"] != named.digest:
            systems[name] = NamedFile(was["path"], f"{was['path']} (as the study recorded it)",
                                      was["text"], was["sha256"])
    return dataclasses.replace(space, systems=systems)


def probe_values(p: Parameter) -> tuple[Any, ...]:
    """The extreme values of a parameter (every choice of a categorical or ordinal one)."""
    if p.type in ("categorical", "ordinal"):
        return p.choices
    assert p.low is not None and p.high is not None
    if p.type == "int":
        return (int(p.low), int(p.high))
    return (p.low, p.high)


def max_accelerators(space: SearchSpace) -> int:
    """The most accelerators a design of ``space`` can have (an upper bound: the largest node
    count times the largest count per node, over every base system)."""
    def highest(base: int, key: str) -> int:
        p = space.parameters.get(key)
        return base if p is None else max(int(v) for v in probe_values(p))

    specs = (space.system_spec(b, tuple(space.fixed.items())) for b in space.bases())
    return max(highest(s.nodes, "nodes") * highest(s.node.accelerators, "node.accelerators")
               for s in specs)

def space_names() -> tuple[str, ...]:
    """Search spaces: ``./search_spaces`` under the working directory and the built-in ones."""
    return SPACE.names()


def load_space(name_or_path: str) -> SearchSpace:
    """Load a search space by name (``search_spaces/NAME.toml``) or path."""
    return _load(name_or_path)


def _load(name_or_path: str) -> SearchSpace:
    path = named_file(name_or_path, SPACE)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = 0  # read_toml reports it
    space = _load_file(str(path.resolve()), stamp, str(path))
    if any(named.changed_since_read() for named in space.systems.values()):
        _load_file.cache_clear()  # a system it names was edited: read everything again
        space = _load_file(str(path.resolve()), stamp, str(path))
    return space


@functools.lru_cache(maxsize=32)
def _load_file(resolved: str, stamp: int, shown: str) -> SearchSpace:
    """A space file by its absolute path and modification time (so a cached space is never one
    read in another working directory or before an edit), named ``shown`` in errors."""
    del stamp
    return space_from_mapping(read_toml(Path(shown)), shown, Path(resolved))


def preset_params(space: SearchSpace, catalog: Catalog | None = None) -> dict[str, dict[str, Any]]:
    """The system presets ``space`` can express exactly, with their parameter values (baselines),
    resolved against ``catalog`` (a study's user catalog: its base system may use a part only
    that catalog defines; default the packaged one).

    A preset fits when its value of every active parameter lies in the parameter's domain and the
    base system with those values is the preset itself (same parts, counts, links and network).
    The base system of a ``system`` parameter is the preset's own name. Workload parameters are
    not part of a system: a baseline leaves them to the sampler.
    """
    out: dict[str, dict[str, Any]] = {}
    base = space.base_spec()
    packaged = {p.stem for p in SYSTEM.builtin.glob("*.toml")}
    for preset in sorted(packaged | set(space.systems)):
        spec = space.system_spec(preset) if preset in space.systems else load_system_spec(
            str(SYSTEM.builtin / f"{preset}.toml"))
        chosen: dict[str, Any] = {}
        ok = True
        for name, p in space.parameters.items():
            if not space.active(name, chosen) or is_workload_param(name):
                continue
            value = preset if name == SYSTEM_PARAM else _value_of(spec, name, catalog)
            if not p.contains(value):
                ok = False
                break
            chosen[name] = value
        if not ok:
            continue
        try:
            rebuilt = space.system_spec(space.base_for(chosen), space.overrides(chosen))
        except DseInputError:
            continue
        if _fingerprint(rebuilt, catalog) == _fingerprint(spec, catalog) and base is not None:
            out[preset] = chosen
    return out


def _fingerprint(spec: SystemSpec, catalog: Catalog | None = None) -> tuple[Any, ...]:
    """What makes two system specs the same machine: every resolved figure, and every field of the
    spec but its name, description, source and buildability constraints, with the node fields that
    default from the catalog compared by what they resolve to (a preset that leaves ``hbm_gb``
    unset is the same machine as one that states the catalog's capacity). Generic over the
    dataclasses' fields, so a field added to the system file is compared without being listed."""
    from dse.model.system import resolve_system

    s = resolve_system(spec, catalog)
    resolved = tuple(getattr(s, f.name) for f in dataclasses.fields(s) if f.name != "spec")
    defaulted: dict[str, Any] = {f.name: None for f in dataclasses.fields(spec.node)
                 if f.default is None and f.name != "hbm_cache_gb"}
    bare = dataclasses.replace(spec, node=dataclasses.replace(spec.node, **defaulted), name="",
                               description="", source="", constraints=ConstraintsSpec())
    return (*resolved, bare)


def _value_of(spec: SystemSpec, dotted: str, catalog: Catalog | None = None) -> Any:
    from dse.model.system import resolve_system

    obj: Any = spec
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            break
    if obj is None and dotted.startswith("node."):
        # Not set in the preset: the value the catalog gives it.
        resolved = resolve_system(spec, catalog)
        defaults = {
            "node.scaleup": resolved.scaleup,
            "node.scaleup_gb_s": resolved.scaleup_bytes_s / 1e9,
            "node.hbm_gb": resolved.hbm_bytes / 1e9,
            "node.hbm_gb_s": resolved.hbm_bytes_s / 1e9,
            "node.pcie_gen": resolved.pcie_gen,
        }
        return defaults.get(dotted)
    return obj


__all__ = ["SYSTEM_PARAM", "Parameter", "SearchSpace", "load_space", "preset_params", "space_names",
           "workload_presets"]
