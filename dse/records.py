"""Strict conversion of TOML tables into frozen dataclasses.

One small, typed loader serves every declarative file (workloads, systems, catalog, search spaces,
objectives, studies): unknown keys, missing keys, wrong types and out-of-range numbers are all reported
as :class:`~dse.errors.DseInputError` naming the file and dotted key.

Supported field types: ``int``, ``float`` (ints accepted), ``str``, ``bool``, ``Literal[...]``,
``tuple[T, ...]``, ``dict[str, T]``, nested dataclasses and ``T | None``. Numeric fields may declare
bounds through field metadata: ``field(metadata={"min": 0, "min_exclusive": True})``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from dse.errors import DseInputError
from dse.limits import (
    MAX_FILE_NAME_BYTES,
    MAX_NAME_CHARS,
    MAX_PATH_BYTES,
    MAX_QUANTITY,
    MAX_SPEC_FILE_BYTES,
    MAX_TEXT_CHARS,
)
from dse.reading import read_text

T = TypeVar("T")

_HINTS: dict[type, dict[str, Any]] = {}
_FLOAT_MAX_INT = 2**1023
"""Integers above this (about 9e307) overflow when a float field converts them."""


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML spec, read by :func:`dse.reading.read_text` (a regular file of at most
    :data:`~dse.limits.MAX_SPEC_FILE_BYTES`, UTF-8), every failure a one-line
    :class:`DseInputError`."""
    return _parse_toml(read_text(path, MAX_SPEC_FILE_BYTES), path)


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    """The table of a spec's ``text`` (read from ``path``), every failure a one-line error."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DseInputError(str(path), "", f"malformed TOML: {exc}") from None
    except RecursionError:
        raise DseInputError(str(path), "", "malformed TOML: nested too deeply") from None
    except ValueError as exc:
        # tomllib lets int()'s limit on digits (4,300 in Python 3.11) escape as a ValueError.
        raise DseInputError(str(path), "", f"malformed TOML: {exc}") from None


def _type_name(tp: Any) -> str:
    if get_origin(tp) is Literal:
        return "one of " + ", ".join(repr(a) for a in get_args(tp))
    return getattr(tp, "__name__", str(tp))


SHOWN_CHARS = 60
"""The most of a value an error line repeats: a value of 100,000 digits is described, not
printed back."""


def brief(value: Any) -> str:
    """A value for an error line: huge integers by size (printing one may itself fail), long
    strings and other values cut to :data:`SHOWN_CHARS` with their length."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length():,} bits"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return f"{value[:SHOWN_CHARS]!r}... (a text of {len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS]}... ({len(text):,} characters)"


def check_text(value: str, source: str, key: str) -> str:
    """Refuse a string longer than its limit: :data:`~dse.limits.MAX_NAME_CHARS` for a name (a
    ``name`` key, or the key of a table), :data:`~dse.limits.MAX_TEXT_CHARS` for any other."""
    is_name = key.rpartition(".")[2] == "name"
    limit = MAX_NAME_CHARS if is_name else MAX_TEXT_CHARS
    if len(value) > limit:
        raise DseInputError(source, key, f"must be at most {limit:,} characters "
                            f"({'a name' if is_name else 'a text'}), got {len(value):,}")
    return value


def _check_bounds(value: float, meta: Mapping[str, Any], source: str, key: str) -> None:
    lo = meta.get("min")
    hi = meta.get("max")
    if lo is not None:
        if meta.get("min_exclusive") and not value > lo:
            raise DseInputError(source, key, f"must be greater than {lo}, got {brief(value)}")
        if value < lo:
            raise DseInputError(source, key, f"must be at least {lo}, got {brief(value)}")
    if hi is not None and value > hi:
        raise DseInputError(source, key, f"must be at most {hi}, got {brief(value)}")
    if hi is None and abs(value) > MAX_QUANTITY:  # finite through every product the model forms
        bound = f"at most {MAX_QUANTITY:g}" if value > 0 else f"at least {-MAX_QUANTITY:g}"
        raise DseInputError(source, key, f"must be {bound} (dse.limits.MAX_QUANTITY), "
                            f"got {brief(value)}")


def convert(tp: Any, value: Any, source: str, key: str, meta: Mapping[str, Any] | None = None) -> Any:
    """Convert ``value`` to type ``tp`` or raise a :class:`DseInputError` naming ``source`` and ``key``."""
    meta = meta or {}
    if tp is Any:
        return value
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        # "none" means absent, unless a member type takes "none" as a value (scaleup = "none").
        takes_none = str in args or any(
            get_origin(a) is Literal and "none" in get_args(a) for a in args
        )
        if value is None or (isinstance(value, str) and value == "none" and not takes_none):
            return None
        return convert(args[0], value, source, key, meta)
    if origin is Literal:
        if value not in get_args(tp):
            raise DseInputError(source, key, f"expected {_type_name(tp)}, got {brief(value)}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise DseInputError(source, key, f"expected a list, got {brief(value)}")
        (item_tp, _) = get_args(tp)
        return tuple(convert(item_tp, v, source, f"{key}[{i}]", meta) for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, Mapping):
            raise DseInputError(source, key, f"expected a table, got {brief(value)}")
        (_, val_tp) = get_args(tp)
        for k in value:
            if len(str(k)) > MAX_NAME_CHARS:
                raise DseInputError(source, key, f"a key must be at most {MAX_NAME_CHARS} "
                                    f"characters (a name), got one of {len(str(k)):,}")
        return {str(k): convert(val_tp, v, source, f"{key}.{k}", meta) for k, v in value.items()}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_mapping(tp, value, source, key)
    if tp is bool:
        if not isinstance(value, bool):
            raise DseInputError(source, key, f"expected true or false, got {brief(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and not meta.get("strict_int", True):
                value = int(value)
            else:
                raise DseInputError(source, key, f"expected an integer, got {brief(value)}")
        _check_bounds(value, meta, source, key)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DseInputError(source, key, f"expected a number, got {brief(value)}")
        if isinstance(value, int) and abs(value) > _FLOAT_MAX_INT:
            raise DseInputError(source, key, "expected a finite number, got an integer of "
                                f"{value.bit_length():,} bits")
        if value != value or value in (float("inf"), float("-inf")):
            raise DseInputError(source, key, f"expected a finite number, got {value!r}")
        _check_bounds(float(value), meta, source, key)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise DseInputError(source, key, f"expected a string, got {brief(value)}")
        return check_text(value, source, key)
    raise TypeError(f"unsupported field type {tp!r} for {key}")


def from_mapping(cls: type[T], data: Any, source: str, prefix: str = "") -> T:
    """Build dataclass ``cls`` from a mapping, strictly.

    Unknown keys and missing required keys are errors; fields with defaults may be omitted.
    """
    if not isinstance(data, Mapping):
        raise DseInputError(source, prefix, f"expected a table, got {brief(data)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = _hints(cls)
    dotted = (prefix + ".") if prefix else ""
    for k in data:
        if k not in fields:
            known = ", ".join(sorted(f for f in fields if fields[f].init))
            shown = k if len(str(k)) <= SHOWN_CHARS else brief(k)
            raise DseInputError(source, f"{dotted}{shown}", f"unknown key (known keys: {known})")
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if not f.init:
            continue
        if name in data:
            kwargs[name] = convert(hints[name], data[name], source, f"{dotted}{name}", f.metadata)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise DseInputError(source, f"{dotted}{name}", "required key is missing")
    return cls(**kwargs)


def to_mapping(obj: Any) -> Any:
    """The inverse of :func:`from_mapping`: plain dicts, lists and scalars (for TOML/JSON output)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: to_mapping(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.init and getattr(obj, f.name) is not None
        }
    if isinstance(obj, tuple | list):
        return [to_mapping(v) for v in obj]
    if isinstance(obj, dict):
        return {k: to_mapping(v) for k, v in obj.items()}
    return obj


PACKAGE_DIR = Path(__file__).resolve().parent
"""The installed ``dse`` package (site-packages in a wheel, the checkout in a source tree)."""


def builtin_folder(folder: str) -> Path:
    """The built-in presets of the repository's top-level ``folder`` (``studies``...).

    A wheel carries them as ``dse/presets/FOLDER`` (copied there by ``setup.py`` when the wheel is
    built); a source checkout or an editable install reads the top-level folder itself, the one
    canonical, editable copy.
    """
    packaged = PACKAGE_DIR / "presets" / folder
    return packaged if packaged.is_dir() else PACKAGE_DIR.parent / folder


@dataclasses.dataclass(frozen=True, slots=True)
class FileKind:
    """One kind of TOML file a user names: where names are looked up, and what errors call it."""

    noun: str
    """What an unknown name is called in the error (``study``, ``workload preset``)."""
    folder: str
    """The folder looked in under the working directory (``studies``)."""
    builtin: Path
    """The built-in presets shipped with dse."""

    def folders(self) -> tuple[Path, Path]:
        """Where names are looked up, first match wins: ``./FOLDER``, then the built-in presets."""
        return Path(self.folder), self.builtin

    def names(self) -> tuple[str, ...]:
        """Every name this kind resolves, from both folders."""
        return tuple(sorted({p.stem for folder in self.folders() for p in folder.glob("*.toml")}))

    def is_builtin(self, path: Path) -> bool:
        """Whether ``path`` is one of the built-in presets (results then go under ``./FOLDER``)."""
        return path.resolve().parent == self.builtin.resolve()

    def preset(self, name: str) -> Path | None:
        """The built-in preset ``name`` stands for, or None; a name no file can have is refused in
        one line before the file system is asked (:func:`check_name`)."""
        check_name(name, self)
        path = self.builtin / f"{name}.toml"
        return path if path.is_file() else None


STUDY = FileKind("study", "studies", builtin_folder("studies"))
SPACE = FileKind("search space", "search_spaces", builtin_folder("search_spaces"))
OBJECTIVES = FileKind("objective set", "objectives", builtin_folder("objectives"))
WORKLOAD = FileKind("workload preset", "workloads", PACKAGE_DIR / "data" / "workloads")
SYSTEM = FileKind("system preset", "systems", PACKAGE_DIR / "data" / "systems")


KINDS = {"system": SYSTEM, "workload": WORKLOAD, "space": SPACE, "objectives": OBJECTIVES,
         "study": STUDY}
"""The kinds of file a user names, by the word ``dse show KIND NAME`` takes."""


def origin(path: Path, kind: FileKind) -> str:
    """Where a resolved file came from, in words: ``packaged system preset dgx-h100 (PATH)`` or
    ``your file PATH`` (a copy under ``./systems`` or a path given)."""
    if kind.is_builtin(path):
        return f"packaged {kind.noun.removesuffix(' preset')} preset {path.stem} ({path.resolve()})"
    return f"your file {path.resolve()}"


def shown_text(name_or_path: str, kind: FileKind) -> str:
    """A file as ``dse show`` prints it: one comment line saying where it came from, then the
    file as it is (comments kept), so the output saved as a file loads back to the same thing."""
    path = named_file(name_or_path, kind)
    text = read_named(path, kind).text
    return f"# {origin(path, kind)}\n{text}" + ("" if text.endswith("\n") else "\n")


def named_file(name_or_path: str, kind: FileKind) -> Path:
    """The TOML file a user named, by one lookup order for every kind of file.

    A path as given (it ends in ``.toml`` or exists); else ``./FOLDER/NAME.toml`` under the working
    directory (the user's own copies); else the built-in preset ``NAME``. Unknown names raise a
    :class:`DseInputError` listing the known ones.
    """
    check_name(name_or_path, kind)
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or path.exists():
        return path
    for folder in kind.folders():
        candidate = folder / f"{name_or_path}.toml"
        if candidate.is_file():
            return candidate
    known = ", ".join(kind.names())
    raise DseInputError(name_or_path, "", f"unknown {kind.noun} (known: {known})")


def check_name(name_or_path: str, kind: FileKind) -> None:
    """Refuse a name or path no file can have before the file system is asked about it: over
    :data:`~dse.limits.MAX_PATH_BYTES` in all, a part over
    :data:`~dse.limits.MAX_FILE_NAME_BYTES` (with ``.toml`` added to a name), or holding a NUL."""
    encoded = name_or_path.encode("utf-8", "surrogateescape")
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if "/" not in name_or_path and not name_or_path.endswith(".toml"):
        longest += len(b".toml")  # a name is looked up as NAME.toml
    if "\0" in name_or_path or len(encoded) > MAX_PATH_BYTES or longest > MAX_FILE_NAME_BYTES:
        raise DseInputError(brief(name_or_path), "", f"unknown {kind.noun}: a file's name is at "
                            f"most {MAX_FILE_NAME_BYTES} bytes and its path {MAX_PATH_BYTES:,} "
                            f"(this one: {len(encoded):,} bytes)")


KIND_FOLDERS = ("studies", "search_spaces", "objectives", "workloads", "systems")
"""The folders of a project laid out as dse's own (``studies/``, ``search_spaces/``...)."""


def named_beside(name_or_path: str, kind: FileKind, naming: Path | None) -> Path:
    """The file a name or path written in the file ``naming`` stands for, whatever the working
    directory: a relative path is taken from ``naming``'s folder; a name is looked up in that
    folder's ``FOLDER`` (``systems/``), then, when ``naming`` sits in a project's kind folder
    (``search_spaces/x.toml``), in the project's ``FOLDER``, then among the packaged presets. A
    packaged file names packaged presets only. Without ``naming`` (a name typed on the command
    line), the working directory's lookup (:func:`named_file`). Unknown names raise a one-line
    :class:`DseInputError` listing the known ones."""
    if naming is None:
        return named_file(name_or_path, kind)
    check_name(name_or_path, kind)
    # Absolute, so that a file named by a bare relative path (``dse status s1.toml`` inside
    # ``studies/``) still knows the kind folder it sits in.
    here = Path(os.path.abspath(naming)).parent
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or "/" in name_or_path:
        return path if path.is_absolute() else here / path
    folders = [] if _is_packaged(naming) else [here / kind.folder]
    if here.name in KIND_FOLDERS and folders:
        folders.append(here.parent / kind.folder)
    for folder in (*folders, kind.builtin):
        candidate = folder / f"{name_or_path}.toml"
        if candidate.is_file():
            return candidate
    known = sorted({p.stem for folder in (*folders, kind.builtin) for p in folder.glob("*.toml")})
    raise DseInputError(name_or_path, "", f"unknown {kind.noun} beside {naming} (known: "
                        f"{', '.join(known)})")


def _is_packaged(path: Path) -> bool:
    """Whether ``path`` is one of dse's own files (a preset, a packaged study, space...)."""
    resolved = path.resolve()
    return resolved.is_relative_to(PACKAGE_DIR) or any(
        resolved.parent == builtin_folder(f).resolve() for f in KIND_FOLDERS)


@dataclasses.dataclass(frozen=True, slots=True)
class NamedFile:
    """A file a study's files name, as it was read: enough to compare it with what a later run
    resolves and to show or rebuild it without the file."""

    path: str
    """Its absolute path when read."""
    source: str
    """How errors name it (``system preset dgx-h100`` or its path)."""
    text: str
    """The file's text as read (comments kept: what ``dse show`` prints)."""
    digest: str
    """:func:`table_digest` of its table."""
    stamp_ns: int = dataclasses.field(default=0, compare=False)
    """Its modification time when read (ns; 0: not read from a file), so a cache can tell it
    was edited since."""

    def changed_since_read(self) -> bool:
        """Whether the file was modified, replaced or removed since it was read."""
        try:
            return Path(self.path).stat().st_mtime_ns != self.stamp_ns
        except OSError:
            return True

    def table(self) -> dict[str, Any]:
        """The file's table (a fresh copy each call, so callers may change it)."""
        return json.loads(_table_json(self.text))  # type: ignore[no-any-return]

    def record(self) -> dict[str, str]:
        """The JSON form a study stores (``dse:contents``)."""
        return {"path": self.path, "sha256": self.digest, "text": self.text}


@functools.lru_cache(maxsize=64)
def _table_json(text: str) -> str:
    """A TOML text's table as JSON: parsed once, copied cheaply (a design's system is built from
    its base's table per trial)."""
    return json.dumps(tomllib.loads(text), default=str)


def read_named(path: Path, kind: FileKind | None) -> NamedFile:
    """Read ``path`` (:func:`read_toml`'s checks and one-line errors) as a :class:`NamedFile`;
    errors name a preset of ``kind`` by its name, any other file by its path."""
    text = read_text(path, MAX_SPEC_FILE_BYTES)  # read once: the table is of this very text
    table = _parse_toml(text, path)
    source = source_name(path, kind) if kind is not None else str(path)
    return NamedFile(str(path.resolve()), source, text, table_digest(table), path.stat().st_mtime_ns)


def table_digest(table: Mapping[str, Any]) -> str:
    """The SHA-256 of a TOML table's content (canonical JSON: keys sorted), so an edit to comments
    or layout is the same content and a changed value is not."""
    return hashlib.sha256(json.dumps(table, sort_keys=True, default=str).encode()).hexdigest()


def source_name(path: Path, kind: FileKind) -> str:
    """How errors name a file: ``workload preset NAME`` for a built-in preset, else its path."""
    return f"{kind.noun} {path.stem}" if kind.is_builtin(path) else str(path)


def parse_override(text: str) -> tuple[str, Any]:
    """Parse one ``--set dotted.key=value`` override; the value is read as a TOML value or a bare string.

    >>> parse_override("node.accelerators=4")
    ('node.accelerators', 4)
    >>> parse_override("node.scaleup=switch")
    ('node.scaleup', 'switch')
    """
    if "=" not in text:
        raise DseInputError("--set", text, "expected dotted.key=value")
    key, raw = (s.strip() for s in text.split("=", 1))
    if not key:
        raise DseInputError("--set", text, "empty key")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except (ValueError, RecursionError):  # TOMLDecodeError, too many digits, too deep
        value = raw
    return key, value


def apply_override(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """Return a copy of nested ``data`` with ``dotted`` key set to ``value`` (tables created as needed)."""
    out = dict(data)
    head, _, rest = dotted.partition(".")
    if not rest:
        out[head] = value
        return out
    inner = out.get(head, {})
    if not isinstance(inner, Mapping):
        raise DseInputError("--set", dotted, f"{head} is not a table")
    out[head] = apply_override(dict(inner), rest, value)
    return out
