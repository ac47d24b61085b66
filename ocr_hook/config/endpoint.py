"""LLM endpoint resolution (spec §2): provider presets (``config/providers.json``) plus the
validated ``[llm]`` section → an :class:`~ocr_hook.llm.types.Endpoint`, and ``llm.api_key_cmd``
(run once, on demand, through ``git.run_command``). ``layering`` re-exports the pure part.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .. import git, util
from ..errors import ConfigError, OcrError
from ..llm import Endpoint  # re-exported for config's signatures

if TYPE_CHECKING:
    from .models import Config, LlmConfig

log = logging.getLogger(__name__)

API_KEY_CMD_TIMEOUT_S = 30.0  # a password manager may be slow to unlock, but a hook must end


def presets() -> dict[str, dict[str, Any]]:
    """Provider presets from ``config/providers.json`` (spec §2): name → {protocol, base_url,
    key_env, base_url_env?, keyless?, output_tokens_field?, auth_header?, azure?, extra_body?}."""
    return dict(util.load_builtin_json("providers.json")["providers"])


def _is_local(url: str) -> bool:
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    return host in ("localhost", "::1") or host.startswith("127.")


def azure_url(base: str, deployment: str, api_version: str) -> str:
    """Azure OpenAI URL, in the two forms Azure OpenAI's REST API documents. A resource endpoint
    (``https://R.openai.azure.com``) becomes the classic deployment URL
    ``…/openai/deployments/<deployment>?api-version=V`` when ``api_version`` is set, else the v1
    API base ``…/openai/v1`` (no api-version; the deployment goes in ``model``). A URL that
    already has an ``/openai/`` path is kept, with ``api-version`` added when given and
    missing."""
    path, _, query = base.partition("?")
    path = path.rstrip("/")
    if "/openai/" not in path + "/":
        if api_version:
            path = f"{path}/openai/deployments/{deployment}"
        else:
            return f"{path}/openai/v1" + (f"?{query}" if query else "")
    if api_version and "api-version=" not in query:
        query = f"{query}&api-version={api_version}" if query else f"api-version={api_version}"
    return path + (f"?{query}" if query else "")


def resolve_endpoint(
    cfg: LlmConfig, environ: Mapping[str, str], api_key_from_cmd: str = ""
) -> tuple[Endpoint | None, str]:
    """The endpoint triple (url, key-or-keyless-local, model), never guessed (spec §2).

    Key order: ``llm.api_key`` (any layer), then ``api_key_from_cmd`` (the caller ran
    ``llm.api_key_cmd``), then the preset's key variable. The output-token field is
    ``llm.output_tokens_field``, else the preset's, else ``max_tokens`` for a loopback server
    (llama.cpp, llama-cpp-python, Ollama and vLLM honour it; llama-cpp-python 0.3.36 and Ollama
    silently ignore ``max_completion_tokens``: measured with bench/real_llm_smoke.py, 4,030
    tokens generated under a 512 limit), else ``max_completion_tokens`` (OpenAI's o-series and
    GPT-5 reject ``max_tokens``). Returns (endpoint, "") or (None, why
    not, naming what is missing). Raises ConfigError for an unknown provider.
    """
    name = cfg.provider or ""
    preset: dict[str, Any] = {}
    if name and name != "custom":  # the presets file is read only for a named provider
        table = presets()
        if name not in table:
            raise ConfigError(
                f"invalid llm.provider = {name!r}; allowed: custom, {', '.join(table)}"
            )
        preset = table[name]
    env_url = environ.get(preset["base_url_env"], "").strip() if preset.get("base_url_env") else ""
    url = cfg.base_url or env_url or preset.get("base_url", "")
    key = cfg.api_key or api_key_from_cmd
    if not key and preset.get("key_env"):
        key = environ.get(preset["key_env"], "").strip()
    protocol = cfg.protocol or preset.get("protocol", "openai")
    if preset.get("azure") and url and cfg.model:
        api_version = cfg.api_version
        if not api_version and preset.get("api_version_env"):
            api_version = environ.get(preset["api_version_env"], "").strip()
        url = azure_url(url, cfg.model, api_version)
    missing = [n for n, v in (("url", url), ("model", cfg.model)) if not v]
    keyless = bool(preset.get("keyless")) or (bool(url) and _is_local(url))
    if not key and not keyless and url:  # without a URL, whether a key is needed is unknown
        missing.append("api key")
    if missing:
        hint = ("set OCR_LLM_URL, OCR_LLM_MODEL and OCR_LLM_TOKEN (no token for a local"
                " server), or llm.provider and llm.model")
        if preset:
            need = [str(preset[k]) for k in ("key_env", "base_url_env") if preset.get(k)]
            hint = (f"set llm.model{' and ' + ' / '.join(need) if need else ''} for provider"
                    f" {name}")
        return None, (f"no LLM endpoint configured (missing {', '.join(missing)}); {hint}"
                      " (`git ocr config set KEY VALUE`)")
    return (
        Endpoint(
            url=url,
            model=cfg.model,
            protocol=protocol,
            api_key=key,
            provider=name or "custom",
            timeout_s=cfg.timeout_s,
            connect_timeout_s=cfg.connect_timeout_s,
            max_retries=cfg.max_retries,
            max_output_tokens=cfg.max_output_tokens,
            max_output_tokens_cap=cfg.max_output_tokens_cap or 0,
            output_tokens_field=cfg.output_tokens_field or preset.get("output_tokens_field")
            or ("max_tokens" if _is_local(url) else "max_completion_tokens"),
            anthropic_version=cfg.anthropic_version,
            extra_headers=tuple({**preset.get("extra_headers", {}),
                                 **cfg.extra_headers}.items()),
            extra_body=tuple({**preset.get("extra_body", {}), **cfg.extra_body}.items()),
            auth_header=preset.get("auth_header", ""),
            tool_choice=preset.get("tool_choice", ""),
            prompt_caching=cfg.prompt_caching,
            prompt_cache_key=bool(preset.get("prompt_cache_key")),
        ),
        "",
    )


def run_api_key_cmd(command: str, environ: Mapping[str, str]) -> str:
    """Run ``llm.api_key_cmd`` and return the first non-blank line it prints (the key).
    Raises ConfigError("llm.api_key_cmd …") when the command fails, times out or prints nothing;
    the message never includes what it printed on stdout (a key)."""
    try:
        rc, out, err = git.run_command(command, API_KEY_CMD_TIMEOUT_S, env=environ)
    except OcrError as e:
        raise ConfigError(f"llm.api_key_cmd: {e}") from e
    if rc != 0:
        first = next((ln.strip() for ln in err.decode("utf-8", "replace").splitlines()
                      if ln.strip()), "")
        raise ConfigError(f"llm.api_key_cmd failed (exit {rc})" + (f": {first}" if first
                                                                    else ""))
    key = next((ln.strip() for ln in out.decode("utf-8", "replace").splitlines()
                if ln.strip()), "")
    if not key:
        raise ConfigError("llm.api_key_cmd printed no key")
    return key


def resolve_llm_endpoint(cfg: Config, environ: Mapping[str, str]) -> tuple[Endpoint | None, str]:
    """:func:`resolve_endpoint` after running ``llm.api_key_cmd`` when no static key is set
    (a static ``llm.api_key`` wins, as in OCR). The command's first output line is the key.
    Raises ConfigError("llm.api_key_cmd …") when the command fails or prints nothing."""
    llm = cfg.llm
    from_cmd = ""
    if llm.api_key_cmd and not llm.api_key:
        from_cmd = run_api_key_cmd(llm.api_key_cmd, environ)
    elif llm.api_key_cmd:
        log.debug("llm.api_key is set; llm.api_key_cmd is not run")
    return resolve_endpoint(llm, environ, from_cmd)


class ApiKeyCommand:
    """``llm.api_key_cmd`` run on demand, at most once: calling it returns the key, or raises
    the same ConfigError again when the one run failed (a locked password manager is asked
    once per review, also in a push of several ranges). Thread-safe."""

    def __init__(self, command: str, environ: Mapping[str, str]) -> None:
        self.command = command
        self._environ = environ
        self._lock = threading.Lock()
        self._outcome: str | ConfigError | None = None

    def __call__(self) -> str:
        with self._lock:
            if self._outcome is None:
                try:
                    self._outcome = run_api_key_cmd(self.command, self._environ)
                except ConfigError as e:
                    self._outcome = e
            if isinstance(self._outcome, ConfigError):
                raise ConfigError(str(self._outcome))
            return self._outcome


def resolve_llm_endpoint_deferred(
    cfg: Config, environ: Mapping[str, str]
) -> tuple[Endpoint | None, str, ApiKeyCommand | None]:
    """The endpoint as :func:`resolve_llm_endpoint` resolves it, without running
    ``llm.api_key_cmd``: (endpoint, why-not, key command). When the key is to come from the
    command, the endpoint has an empty ``api_key`` and the third value runs the command; a
    review calls it only before its first LLM request, so ``--preview``, a change with nothing
    to review and a cache hit never run it. Raises ConfigError for an unknown provider."""
    llm = cfg.llm
    if not (llm.api_key_cmd and not llm.api_key):
        endpoint, why = resolve_endpoint(llm, environ)
        return endpoint, why, None
    endpoint, why = resolve_endpoint(llm, environ, "(llm.api_key_cmd)")
    if endpoint is None:  # no url or model: the command's key would not help
        return None, why, None
    return endpoint._replace(api_key=""), "", ApiKeyCommand(llm.api_key_cmd, environ)

