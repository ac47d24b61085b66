"""``shapes.check`` (exact shapes without pydantic) against pydantic itself on the same
dataclasses: whatever the fast path accepts, pydantic accepts with the same value; what needs a
conversion or is invalid is left to pydantic. Pure: no git, no processes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from ocr_hook.config.models import Config
from ocr_hook.util.shapes import Bound, check_shape, field_types, plain_type


@dataclass(frozen=True)
class Inner:
    __pydantic_config__ = {"extra": "forbid"}

    n: Annotated[int, Bound(ge=0, le=10)] = 1
    x: Annotated[float, Bound(gt=0)] = 1.0
    opt: Annotated[int, Bound(ge=1)] | None = None
    kind: Literal["a", "b", ""] = ""
    tags: list[str] = field(default_factory=list)
    table: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Outer:
    __pydantic_config__ = {"extra": "forbid"}

    name: str
    inner: Inner = field(default_factory=Inner)
    flag: bool = False


@dataclass(frozen=True)
class Loose:  # pydantic's default for a dataclass: unknown keys ignored
    name: str = ""


@pytest.mark.parametrize(("data", "expected"), [
    ({"name": "x"}, Outer("x")),
    ({"name": "x", "inner": {"n": 10, "x": 2, "opt": None, "kind": "a", "tags": ["t"],
                             "table": {"k": "v"}}},
     Outer("x", Inner(10, 2.0, None, "a", ["t"], {"k": "v"}))),
    ({"name": "x", "inner": {"n": 11}}, None),          # above le
    ({"name": "x", "inner": {"x": 0}}, None),           # not gt
    ({"name": "x", "inner": {"opt": 0}}, None),         # below ge inside an optional
    ({"name": "x", "inner": {"n": "3"}}, None),         # a conversion: pydantic's job
    ({"name": "x", "inner": {"n": True}}, None),        # bool is not int here
    ({"name": "x", "inner": {"kind": "c"}}, None),      # not a choice
    ({"name": "x", "inner": {"tags": "t"}}, None),      # not a list
    ({"name": "x", "inner": {"table": {"k": 1}}}, None),
    ({"name": "x", "other": 1}, None),                  # unknown key, extra forbid
    ({}, None),                                         # a required key is missing
    ("x", None),
])
def test_check_accepts_exact_shapes_only(data: Any, expected: Outer | None) -> None:
    assert check_shape(Outer, data) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ({"n": "4", "x": "0.5", "opt": "7"}, Inner(4, 0.5, 7)),
    ({"n": "+4", "x": "1e3"}, Inner(4, 1000.0)),
    ({"n": "4.0"}, None), ({"n": " 4"}, None), ({"n": "11"}, None), ({"x": "0"}, None),
])
def test_text_scalars_accept_plain_number_forms_only(text: dict[str, str],
                                                     expected: Inner | None) -> None:
    assert check_shape(Inner, text, text_scalars=True) == expected
    assert check_shape(Inner, text) is None


@dataclass(frozen=True)
class Flags:
    on: bool = False


@pytest.mark.parametrize("text", ["true", "TRUE", "1", "yes", "on", "t", "y"])
def test_text_scalars_accept_the_boolean_words_pydantic_accepts(text: str) -> None:
    assert check_shape(Flags, {"on": text}, text_scalars=True) == Flags(True)
    assert TypeAdapter(Flags).validate_python({"on": text}) == Flags(True)


def test_unknown_keys_are_ignored_without_extra_forbid_and_bounds_reach_pydantic() -> None:
    assert check_shape(Loose, {"name": "a", "zzz": 1}) == Loose("a")
    with pytest.raises(ValidationError) as e:
        TypeAdapter(Outer).validate_python({"name": "x", "inner": {"n": 11}})
    assert e.value.errors()[0]["msg"] == "Input should be less than or equal to 10"
    assert plain_type(field_types(Inner)["opt"]) is int


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 300_000), st.floats(-5, 1e6, allow_nan=False),
    st.sampled_from(["", "low", "high", "openai", "blocking", "4", "true", "x", "yes", "0",
                     "1.5", "+3", "-1", " 4", "1e3", "T", "off", "4.0", "1_0", "nan"]),
    st.lists(st.sampled_from(["a", "*.py", 3]), max_size=3),
    st.dictionaries(st.sampled_from(["k", "X-Team"]), st.sampled_from(["v", 1, {"a": 1}]),
                    max_size=2),
)


@st.composite
def config_data(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for section, cls in field_types(Config).items():
        if draw(st.booleans()):
            keys = [*field_types(cls), "nope"]
            out[section] = draw(st.dictionaries(st.sampled_from(keys), VALUES, max_size=4))
    return out


CONFIG = TypeAdapter(Config)


@settings(max_examples=200, deadline=None)
@given(config_data())
def test_fast_path_agrees_with_pydantic_on_every_configuration(data: dict[str, Any]) -> None:
    fast = check_shape(Config, data, text_scalars=True)
    try:
        slow: Config | None = CONFIG.validate_python(data)
    except ValidationError:
        slow = None
    if fast is not None:
        assert slow is not None and asdict(slow) == asdict(fast)  # configs compare by identity
