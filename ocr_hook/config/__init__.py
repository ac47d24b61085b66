"""Configuration: section models, layering of defaults, user file, repository file, environment and
flags, endpoint resolution, consent, TOML editing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util import lazy_exports

if TYPE_CHECKING:
    from .consent import consent_fingerprint, consent_given, record_consent
    from .endpoint import resolve_llm_endpoint, resolve_llm_endpoint_deferred
    from .layering import (
        Config,
        Layer,
        all_keys,
        build_config,
        field_of,
        merge_layers,
        parse_toml,
        parse_value,
        provider_presets,
    )
    from .load import (
        HEAD_FILES,
        REPO_SOURCE,
        config_layers,
        load_config,
        load_settings,
        read_repo_file,
        read_user_file,
        repo_endpoint_settings,
        repo_mcp_servers,
        user_config_path,
        write_private,
    )
    from .repo_file import read_repo_path
    from .toml_edit import edit_toml, toml_literal

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "consent": ("consent_fingerprint", "consent_given", "record_consent",),
    "endpoint": ("resolve_llm_endpoint", "resolve_llm_endpoint_deferred",),
    "layering": (
        "Config",
        "Layer",
        "all_keys",
        "build_config",
        "field_of",
        "merge_layers",
        "parse_toml",
        "parse_value",
        "provider_presets",
    ),
    "load": (
        "HEAD_FILES",
        "REPO_SOURCE",
        "config_layers",
        "load_config",
        "load_settings",
        "read_repo_file",
        "read_user_file",
        "repo_endpoint_settings",
        "repo_mcp_servers",
        "user_config_path",
        "write_private",
    ),
    "repo_file": ("read_repo_path",),
    "toml_edit": ("edit_toml", "toml_literal",),
})
