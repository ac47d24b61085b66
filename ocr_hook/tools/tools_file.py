"""The shape of a tools file (spec §7.2: ``config/tools.json``'s format, also a user's
``tools.file``) and its validation: ``util.check_shape`` for a file of the exact shape, pydantic
for anything else, which names the first problem. Only a user's tools file is validated here
(``registry.parse_tools_json``); the shipped file is package data, read as it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any

from ..errors import ConfigError
from ..util import Bound, check_shape


@dataclass(frozen=True)
class Definition:  # unknown keys of the file are ignored (pydantic's default for a dataclass)
    """A tool's ``definition``: JSON Schema ``parameters``, ``name`` and ``description``."""

    parameters: dict[str, Any]
    name: str = ""
    description: str = ""


@dataclass(frozen=True)
class Entry:
    """One tool of the file: its name, definition and the phases that offer it."""

    name: Annotated[str, Bound(min_length=1)]
    definition: Definition
    plan_task: bool = False
    main_task: bool = True


@dataclass(frozen=True)
class ToolsFile:
    """The whole file: ``{"tools": [...]}``."""

    tools: list[Entry]


@functools.cache
def _adapter() -> Any:
    """pydantic's validator of a tools file (for data ``check_shape`` does not accept)."""
    from pydantic import TypeAdapter

    return TypeAdapter(ToolsFile)


def parse(data: Any, source: str) -> ToolsFile:
    """``data`` (parsed JSON, ``{"tools": [...]}``) as a ToolsFile. Raises
    ConfigError("tools file <source>: <location>: <problem>") for the first problem."""
    parsed = check_shape(ToolsFile, data)
    if parsed is not None:
        return parsed
    from pydantic import ValidationError

    try:
        validated: ToolsFile = _adapter().validate_python(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"tools file {source}: {loc}: {err['msg']}") from None
    return validated
