"""Prompt rendering from named templates (``config/templates/<name>.md``).

Placeholders are ``{{name}}``. Substitution is a single pass over the template only: text that
is substituted (diffs, code, rules) is never scanned again, so a diff containing ``{{diffs}}``
cannot inject anything. A ``{{name}}`` with no value becomes "" and an optional section
``<!-- if name -->…<!-- end name -->`` is dropped when ``name`` is empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from . import resources
from .text import xml_attr as xml_attr  # re-exported: it lives with the other prompt escaping

_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
_SECTION = re.compile(r"<!-- if ([a-z_]+) -->\n?(.*?)<!-- end \1 -->\n?", re.S)


def render_text(template: str, fields: Mapping[str, str]) -> str:
    """Render ``template`` with ``fields`` (see module docstring)."""

    def section(m: re.Match[str]) -> str:
        return m.group(2) if fields.get(m.group(1)) else ""

    template = _SECTION.sub(section, template)
    return _PLACEHOLDER.sub(lambda m: fields.get(m.group(1), ""), template)


def render_template(name: str, fields: Mapping[str, str]) -> str:
    """Render built-in template ``name``. Raises FileNotFoundError for an unknown name."""
    return render_text(resources.template(name), fields)
