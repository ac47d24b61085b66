"""Exact shape checks of JSON-like data against typed dataclasses, without pydantic.

pydantic validates configuration and stored files at the edge, but importing it costs more than
the whole run of a cache hit or a preview. :func:`check_shape` accepts data only when it
already has exactly the annotated shape (no coercion) and builds the frozen dataclass; anything
else returns None, and the caller either falls back to pydantic (configuration: conversions
such as ``"4"`` → 4 and the error message) or treats it as absent (a cache entry).

Supported annotations: ``str``, ``bool``, ``int``, ``float`` (an ``int`` is converted, as
pydantic does), ``None``, ``Any``, ``X | Y``, ``Literal[...]``, ``list[X]``, ``tuple[X, ...]``,
``dict[str, X]``, nested dataclasses, and ``Annotated[X, Bound(...) | Check(...)]``.
:class:`Bound` (numeric/length constraints) and :class:`Check` (a validating function) are
understood by both sides: this module applies them, and pydantic through
``__get_pydantic_core_schema__`` (so the dataclasses need no pydantic import, and not the
slow-to-import ``annotated_types`` either). A float that is not finite is a mismatch. Unknown
keys are mismatches when the class's ``__pydantic_config__`` says ``extra="forbid"`` and ignored
otherwise (pydantic's default); for a ``typing.NamedTuple`` record (no such setting) they are
always mismatches. Missing keys without a default are mismatches.

``text_scalars=True`` also accepts the unambiguous text forms of scalars that environment
variables carry (``"true"``/``"0"``/``"yes"`` for ``bool``, ``"4"``/``"-1"`` for ``int``,
``"0.5"``/``"1e3"`` for ``float``), converted as pydantic converts them; any other text is
still a mismatch and left to pydantic.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False,
              "on": True, "off": False, "t": True, "f": False, "y": True, "n": False}
# compiled on first use (``re``'s cache): only environment text needs them
_INT_TEXT = r"[+-]?[0-9]+"
_FLOAT_TEXT = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


class Bound(typing.NamedTuple):
    """Bounds of a number (``gt``/``ge``/``lt``/``le``) or of a length (``min_length``/
    ``max_length``) for ``Annotated[X, Bound(...)]`` fields."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    min_length: int | None = None
    max_length: int | None = None

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        """pydantic's hook: the schema of ``source`` with these bounds as core constraints."""
        schema = dict(handler(source))
        schema.update({k: v for k, v in self._asdict().items() if v is not None})
        return schema


class Check(typing.NamedTuple):
    """A validating function for ``Annotated[X, Check(fn)]``: ``fn(value)`` returns the value
    (possibly normalised) or raises ValueError with a message for people.
    :func:`check_shape` treats the ValueError as a mismatch (left to pydantic); pydantic runs
    ``fn`` as an after-validator and reports the message."""

    fn: Callable[[Any], Any]

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        """pydantic's hook: the schema of ``source`` followed by ``fn``."""
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(self.fn, handler(source))


def plain_type(tp: Any) -> Any:
    """``tp`` without ``Annotated`` wrappers and without ``None`` in a union (``int`` for
    ``Annotated[int, Bound(ge=0)] | None``)."""
    if typing.get_origin(tp) is typing.Annotated:
        return plain_type(typing.get_args(tp)[0])
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        arms = [plain_type(a) for a in typing.get_args(tp) if a is not type(None)]
        return arms[0] if len(arms) == 1 else tp
    return tp


class Mismatch(Exception):
    """Internal: the data does not have the annotated shape."""


def is_record(tp: Any) -> bool:
    """Whether ``tp`` is a class :func:`check_shape` builds from a mapping: a dataclass or a
    ``typing.NamedTuple``."""
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp)
                                     or (issubclass(tp, tuple) and hasattr(tp, "_fields")))


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotations of record ``cls`` (dataclass or NamedTuple; ``Annotated``
    kept), by field name in declaration order."""
    hints = typing.get_type_hints(cls, include_extras=True)
    record: Any = cls
    names = ([f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls)
             else list(record._fields))
    return {name: hints[name] for name in names}


@functools.cache
def _required(cls: type) -> frozenset[str]:
    """The fields of record ``cls`` without a default."""
    record: Any = cls
    if dataclasses.is_dataclass(cls):
        return frozenset(f.name for f in dataclasses.fields(cls)
                         if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING)
    return frozenset(record._fields) - frozenset(record._field_defaults)


def check_shape(cls: type[T], data: Any, *, text_scalars: bool = False) -> T | None:
    """``cls(**data)`` when ``data`` has exactly the shape of record ``cls`` (a dataclass or a
    NamedTuple, recursively;
    with ``text_scalars``, scalars may also be text, see the module doc), else None. Never
    raises for bad data."""
    try:
        value = _value(cls, data, text_scalars)
    except Mismatch:
        return None
    return typing.cast(T, value)


def _record(cls: type, data: Any, text: bool) -> Any:
    if not isinstance(data, Mapping):
        raise Mismatch
    hints = field_types(cls)
    forbid = (not dataclasses.is_dataclass(cls)  # a NamedTuple: always exact
              or getattr(cls, "__pydantic_config__", {}).get("extra") == "forbid")
    if any(type(k) is not str or (forbid and k not in hints) for k in data):
        raise Mismatch
    required = _required(cls)
    kwargs: dict[str, Any] = {}
    for name, tp in hints.items():
        if name in data:
            kwargs[name] = _value(tp, data[name], text)
        elif name in required:
            raise Mismatch
    return cls(**kwargs)


def _bounded(value: Any, meta: Any) -> None:
    if not isinstance(meta, Bound):
        raise Mismatch  # a constraint this module does not know
    size = len(value) if meta.min_length is not None or meta.max_length is not None else 0
    if ((meta.gt is not None and not value > meta.gt)
            or (meta.ge is not None and not value >= meta.ge)
            or (meta.lt is not None and not value < meta.lt)
            or (meta.le is not None and not value <= meta.le)
            or (meta.min_length is not None and size < meta.min_length)
            or (meta.max_length is not None and size > meta.max_length)):
        raise Mismatch


def _scalar(tp: Any, data: Any, text: bool) -> Any:
    """``data`` as a ``bool``, ``int`` or ``float`` (``tp``): the exact type, an ``int`` for a
    ``float``, or (``text``) one of the unambiguous text forms."""
    if type(data) is str and text:
        if tp is bool and data.lower() in _BOOL_TEXT:
            return _BOOL_TEXT[data.lower()]
        if tp is int and re.fullmatch(_INT_TEXT, data):
            return int(data)
        if tp is float and re.fullmatch(_FLOAT_TEXT, data) and math.isfinite(float(data)):
            return float(data)
        raise Mismatch
    if tp is float and type(data) in (int, float):
        if not math.isfinite(data):
            raise Mismatch
        return float(data)
    if type(data) is tp:
        return data
    raise Mismatch


def _value(tp: Any, data: Any, text: bool = False) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *metas = typing.get_args(tp)
        value = _value(base, data, text)
        for meta in metas:
            if isinstance(meta, Check):
                try:
                    value = meta.fn(value)
                except ValueError:
                    raise Mismatch from None
            else:
                _bounded(value, meta)
        return value
    if tp is Any:
        return data
    if tp is None or tp is type(None):
        if data is not None:
            raise Mismatch
        return None
    if origin is typing.Union or origin is types.UnionType:
        for arm in typing.get_args(tp):
            try:
                return _value(arm, data, text)
            except Mismatch:
                continue
        raise Mismatch
    if origin is typing.Literal:
        if not any(type(data) is type(c) and data == c for c in typing.get_args(tp)):
            raise Mismatch
        return data
    if origin is list or origin is tuple:
        if not isinstance(data, list | tuple):
            raise Mismatch
        arg = typing.get_args(tp)[0]
        items = [_value(arg, x, text) for x in data]
        return items if origin is list else tuple(items)
    if origin is dict:
        key_tp, val_tp = typing.get_args(tp)
        if not isinstance(data, Mapping) or any(type(k) is not str for k in data):
            raise Mismatch
        return {k: _value(val_tp, v, text) for k, v in data.items()}
    if tp is bool or tp is int or tp is float:
        return _scalar(tp, data, text)
    if tp is str:
        if type(data) is not str:
            raise Mismatch
        return data
    if is_record(tp):
        return _record(tp, data, text)
    raise Mismatch  # an annotation this module does not know: let the caller decide
