"""``git ocr config list|get|set|unset|path`` and ``git ocr llm test|providers`` (SPEC §1, §2,
§13), plus the two steps every LLM command shares: layering the configuration and resolving the
endpoint (running ``llm.api_key_cmd`` when needed). ``cli`` builds the parsers with
:func:`add_commands` and calls :func:`run`; printing happens here and in ``cli`` only.

The user file is ``$XDG_CONFIG_HOME/ocr-hook/config.toml`` (``~/.config/…`` without XDG). It is
written atomically (temporary file in the same folder, then ``os.replace``) with mode 0600, its
folder 0700: it may hold an API key. ``set`` edits the one line it changes, so comments stay.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError, GitError, LlmError, OcrError

log = logging.getLogger(__name__)

API_KEY_CMD_TIMEOUT_S = 30.0  # a password manager may be slow to unlock, but a hook must end
EXIT_OK, EXIT_NO_TOOLS, EXIT_USAGE, EXIT_LLM_FAILED = 0, 1, 2, 3
PROBE_SYSTEM = (
    "You are the code reviewer of ocr-hook. This request checks that the model can call the"
    " review tools. Reply only by calling a tool."
)
PROBE_USER = (
    'Connectivity check: there is nothing to review. Call the task_done tool with {"state":'
    ' "DONE"} now. Do not answer with text.'
)


def _say(text: object = "") -> None:
    """One line of command output on stdout (stdout carries the command's result alone)."""
    sys.stdout.write(f"{text}\n")


def user_config_path(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/ocr-hook/config.toml``, else ``~/.config/ocr-hook/config.toml``."""
    from .resources import user_config_dir

    return user_config_dir(environ) / "config.toml"


def _read_user_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else ""
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from e


def config_layers(repo: Path | None, environ: Mapping[str, str],
                  flags: Any | None = None) -> list[Any]:
    """The layers of SPEC §2, lowest first: user file, repository file ``.ocr-hook.toml`` read
    from HEAD (when ``repo`` is given; secrets refused there), the selected preset's standard
    variables (``OPENAI_API_KEY``…), ``OCR_HOOK_*``/``OCR_LLM_*``, and ``flags`` (a Layer)."""
    from . import config, gitio

    layers: list[Any] = []
    user = user_config_path(environ)
    text = _read_user_file(user)
    if text:
        layers.append(config.Layer(str(user), config.parse_toml(text, str(user))))
    if repo is not None:
        rc, out, _ = gitio.run_git_full(repo, "cat-file", "blob", f"HEAD:{config.REPO_FILE}",
                                        ok_codes=(0, 128), timeout_s=10)
        if rc == 0:
            src = f"{config.REPO_FILE} (HEAD)"
            layer = config.check_repo_layer(
                config.Layer(src, config.parse_toml(gitio.decode_text(out), src)))
            layers.append(guard_repo_endpoint(layer, repo, environ))
    env = config.env_layer(environ)
    upper = [env] + ([flags] if flags is not None else [])
    layers.append(config.preset_env_layer([*layers, *upper], environ))
    layers.extend(upper)
    return layers


ENDPOINT_KEYS = ("base_url", "extra_headers")  # where a request (and the user's key) is sent


def repo_endpoint_settings(layer: Any) -> dict[str, Any]:
    """The repository file's settings that decide where requests go (``llm.base_url``,
    ``llm.extra_headers``)."""
    llm = layer.data.get("llm") if isinstance(layer.data, Mapping) else None
    if not isinstance(llm, Mapping):
        return {}
    return {k: llm[k] for k in ENDPOINT_KEYS if k in llm}


def guard_repo_endpoint(layer: Any, repo: Path, environ: Mapping[str, str]) -> Any:
    """Drop ``llm.base_url``/``llm.extra_headers`` from the committed repository file unless the
    user allowed exactly those values with ``git ocr config allow-endpoint`` (SPEC §14: a
    repository must not be able to send the user's API key to a server of its choosing).
    Returns the layer, possibly without those keys; a warning says what was ignored."""
    from . import config, consent

    settings = repo_endpoint_settings(layer)
    if not settings:
        return layer
    fp = consent.fingerprint({"endpoint": settings})
    if consent.is_allowed(environ, repo, fp):
        return layer
    llm = {k: v for k, v in layer.data["llm"].items() if k not in ENDPOINT_KEYS}
    data = {**layer.data, "llm": llm}
    log.warning(
        "ignoring %s from %s: a repository may not choose where your API key is sent; review"
        " it and run `git ocr config allow-endpoint` to trust it",
        ", ".join(f"llm.{k}" for k in settings), layer.source,
    )
    return config.Layer(layer.source, data)


def allow_endpoint(environ: Mapping[str, str]) -> int:
    """``git ocr config allow-endpoint``: trust the endpoint settings of ``.ocr-hook.toml`` at
    HEAD for this repository (recorded with the MCP consents, ocr_hook/consent.py)."""
    from . import config, consent, gitio

    repo = gitio.find_toplevel(Path.cwd())
    rc, out, _ = gitio.run_git_full(repo, "cat-file", "blob", f"HEAD:{config.REPO_FILE}",
                                    ok_codes=(0, 128), timeout_s=10)
    src = f"{config.REPO_FILE} (HEAD)"
    data = config.parse_toml(gitio.decode_text(out), src) if rc == 0 else {}
    settings = repo_endpoint_settings(config.Layer(src, data))
    if not settings:
        raise OcrError(f"{src} sets neither llm.base_url nor llm.extra_headers; nothing to allow")
    lines = [f"llm.{k} = {settings[k]!r}" for k in settings]
    path = consent.record(environ, repo, consent.fingerprint({"endpoint": settings}), lines)
    print(f"Trusting the endpoint settings of {src} in {repo}:")
    for line in lines:
        print(f"  {line}")
    print(f"Recorded in {path}; any change to them needs a new `git ocr config allow-endpoint`.")
    return 0


def run_api_key_cmd(command: str, environ: Mapping[str, str]) -> str:
    """Run ``llm.api_key_cmd`` and return the first non-blank line it prints (the key).
    Raises ConfigError("llm.api_key_cmd …") when the command fails, times out or prints nothing;
    the message never includes what it printed on stdout (a key)."""
    from . import gitio

    try:
        rc, out, err = gitio.run_command(command, API_KEY_CMD_TIMEOUT_S, env=environ)
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


def resolve_llm_endpoint(cfg: Any, environ: Mapping[str, str]) -> tuple[Any, str]:
    """``config.resolve_endpoint`` after running ``llm.api_key_cmd`` when no static key is set
    (a static ``llm.api_key`` wins, as in OCR). The command's first output line is the key.
    Raises ConfigError("llm.api_key_cmd …") when the command fails or prints nothing."""
    from . import config

    llm = cfg.llm
    from_cmd = ""
    if llm.api_key_cmd and not llm.api_key:
        from_cmd = run_api_key_cmd(llm.api_key_cmd, environ)
    elif llm.api_key_cmd:
        log.debug("llm.api_key is set; llm.api_key_cmd is not run")
    return config.resolve_endpoint(llm, environ, from_cmd)


class ApiKeyCommand:
    """``llm.api_key_cmd`` run on demand, at most once: calling it returns the key, or raises
    the same ConfigError again when the one run failed (a locked password manager is asked
    once per review, also in a push of several ranges). Thread-safe."""

    def __init__(self, command: str, environ: Mapping[str, str]) -> None:
        import threading

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
    cfg: Any, environ: Mapping[str, str]
) -> tuple[Any, str, ApiKeyCommand | None]:
    """The endpoint as :func:`resolve_llm_endpoint` resolves it, without running
    ``llm.api_key_cmd``: (endpoint, why-not, key command). When the key is to come from the
    command, the endpoint has an empty ``api_key`` and the third value runs the command; a
    review calls it only before its first LLM request, so ``--preview``, a change with nothing
    to review and a cache hit never run it. Raises ConfigError for an unknown provider."""
    import dataclasses

    from . import config

    llm = cfg.llm
    if not (llm.api_key_cmd and not llm.api_key):
        endpoint, why = config.resolve_endpoint(llm, environ)
        return endpoint, why, None
    endpoint, why = config.resolve_endpoint(llm, environ, "(llm.api_key_cmd)")
    if endpoint is None:  # no url or model: the command's key would not help
        return None, why, None
    return dataclasses.replace(endpoint, api_key=""), "", ApiKeyCommand(llm.api_key_cmd, environ)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically with mode 0600 (folder created 0700): a temporary
    file in the same folder, fsync, ``os.replace``. Raises ConfigError on failure."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from e


CONFIG_ACTIONS = ("list", "get", "set", "unset", "path")


def _config_actions(sub: Any, parser_class: type[argparse.ArgumentParser]) -> Any:
    """The subparsers action of ``config``: the existing one when another module already added
    a ``config`` command (e.g. ``config allow-mcp``), else a new one."""
    existing = sub.choices.get("config")
    if existing is None:
        existing = sub.add_parser("config", help="show or change settings (SPEC §2)")
    for action in existing._actions:  # argparse keeps subparsers among the parser's actions
        if isinstance(action, argparse._SubParsersAction):
            return action
    return existing.add_subparsers(dest="config_cmd", metavar="ACTION",
                                   parser_class=parser_class)


def add_commands(sub: Any, parser_class: type[argparse.ArgumentParser]) -> None:
    """Add ``config list|get|set|unset|path`` and ``llm test|providers`` to ``sub`` (argparse
    subparsers). Settings are layered: flags > environment > ``.ocr-hook.toml`` at HEAD > user
    file > defaults; set/unset change the user file."""
    cs = _config_actions(sub, parser_class)
    cl = cs.add_parser("list", help="every key with its effective value")
    cl.add_argument("--show-origin", action="store_true", help="also show where it comes from")
    cg = cs.add_parser("get", help="the effective value of KEY (exit 1 when unset)")
    cg.add_argument("key", metavar="KEY", help="section.name, e.g. llm.model")
    cg.add_argument("--show-secret", action="store_true",
                    help="print llm.api_key in full (it is masked by default)")
    cset = cs.add_parser("set", help="set KEY in the user file (VALUE - reads stdin)")
    cset.add_argument("key", metavar="KEY")
    cset.add_argument("value", metavar="VALUE")
    cu = cs.add_parser("unset", help="remove KEY from the user file")
    cu.add_argument("key", metavar="KEY")
    cs.add_parser("path", help="the user file's path")
    lp = sub.add_parser("llm", help="check the LLM endpoint or list provider presets")
    ls = lp.add_subparsers(dest="llm_cmd", metavar="ACTION", parser_class=parser_class)
    lt = ls.add_parser("test", help="send one review-shaped request (tools included); exit 0"
                       " tools work, 1 the model does not call tools, 2 no endpoint, 3 failed")
    lt.add_argument("--provider", metavar="NAME", help="provider preset")
    lt.add_argument("--model", metavar="NAME", help="model")
    lt.add_argument("--json", action="store_true", help="one JSON object on stdout")
    lt.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    lpr = ls.add_parser("providers", help="the built-in provider presets")
    lpr.add_argument("--json", action="store_true", help="the presets as JSON")


def run(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Run ``config …`` or ``llm …``; returns the exit code. Raises OcrError for usage errors."""
    if args.command == "config":
        return _config(args, environ)
    return _llm(args, environ)


def _repo_or_none() -> Path | None:
    from . import gitio

    try:
        return gitio.find_toplevel(Path.cwd())
    except GitError:
        return None


def _display(key: str, value: Any, raw: bool) -> str:
    from . import config

    if key == "llm.api_key" and value and not raw:
        from .llm.types import mask_key

        return config.toml_literal(mask_key(str(value)))
    if raw and isinstance(value, str):
        return value
    return config.toml_literal(value)


def _config(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from . import config

    action = getattr(args, "config_cmd", None)
    path = user_config_path(environ)
    if action == "path":
        _say(path)
        return EXIT_OK
    if action in ("list", "get"):
        layers = config_layers(_repo_or_none(), environ)
        cfg = config.build(layers)
        _, origin = config.merge(layers)
        keys = config.all_keys() if action == "list" else [args.key]
        if action == "get":
            config.field_of(args.key)
        for key in keys:
            section, name = key.split(".", 1)
            value = getattr(getattr(cfg, section), name)
            if action == "get":
                if value is None or value == "":
                    return 1  # unset, as `git config --get` reports it
                if key == "llm.api_key" and not args.show_secret:
                    _say(_display(key, value, raw=False))  # masked, as `list` shows it
                else:
                    _say(_display(key, value, raw=True))
                return EXIT_OK
            shown = "(unset)" if value is None else _display(key, value, raw=False)
            where = origin.get(key, "default")
            _say(f"{key} = {shown}" + (f"\t# {where}" if args.show_origin else ""))
        return EXIT_OK
    if action in ("set", "unset"):
        config.field_of(args.key)
        text = _read_user_file(path)
        new_value: Any = None
        if action == "set":
            raw = sys.stdin.readline().rstrip("\r\n") if args.value == "-" else args.value
            if not raw.strip():
                where = "no value on stdin" if args.value == "-" else "empty value"
                raise ConfigError(f"{where} for {args.key}; nothing written (to remove the key:"
                                  f" git ocr config unset {args.key})")
            new_value = config.parse_value(args.key, raw)
            section, _, name = args.key.partition(".")
            # the value itself first: its error names the command line, not the file
            config.build([config.Layer("command line", {section: {name: new_value}})])
        new_text = config.edit_toml(text, args.key, new_value, str(path))
        # then what the file will hold, naming the file in the error
        config.build([config.Layer(str(path), config.parse_toml(new_text, str(path)))])
        if action == "unset" and new_text == text:
            log.info("%s is not set in %s", args.key, path)
            return EXIT_OK
        write_private(path, new_text)
        return EXIT_OK
    raise OcrError("usage: git ocr config list|get KEY|set KEY VALUE|unset KEY|path")


def _llm(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    from . import config

    action = getattr(args, "llm_cmd", None)
    if action == "providers":
        table = config.presets()
        if args.json:
            _say(json.dumps(table, indent=2, ensure_ascii=False))
            return EXIT_OK
        rows = [("NAME", "PROTOCOL", "BASE URL", "KEY VARIABLE", "NOTES")]
        for name, p in table.items():
            key_env = p.get("key_env") or ("(none)" if p.get("keyless") else "")
            if p.get("keyless") and p.get("key_env"):
                key_env += " (optional)"
            rows.append((name, p.get("protocol", "openai"),
                         p.get("base_url") or f"${p.get('base_url_env', '')}", key_env,
                         p.get("note", "")))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            _say("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4])
        _say("\nUse: git ocr config set llm.provider NAME; git ocr config set llm.model MODEL")
        return EXIT_OK
    if action == "test":
        return _llm_test(args, environ)
    raise OcrError("usage: git ocr llm test|providers")


def _llm_test(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """Send the review's request shape (system + user message, every main tool) once; report
    latency, whether the model called a tool, and the resolved endpoint with the key masked."""
    from . import config, tokens
    from .agent.loop import text_tool_calls
    from .llm import make_client
    from .llm.anthropic import messages_url
    from .llm.openai import chat_url
    from .llm.types import Message, mask_key
    from .tools.registry import load_tool_specs

    flags: dict[str, Any] = {}
    if args.provider:
        flags["provider"] = args.provider
    if args.model:
        flags["model"] = args.model
    layers = config_layers(_repo_or_none(), environ,
                           config.Layer("command line", {"llm": flags} if flags else {}))
    cfg = config.build(layers)
    endpoint, why = resolve_llm_endpoint(cfg, environ)
    if endpoint is None:
        raise ConfigError(why)
    url = messages_url(endpoint.url) if endpoint.protocol == "anthropic" else chat_url(
        endpoint.url)
    report: dict[str, Any] = {
        "provider": endpoint.provider, "protocol": endpoint.protocol, "model": endpoint.model,
        "url": url, "api_key": mask_key(endpoint.api_key) or "(none)",
    }
    tools = [spec for spec, _plan, main in load_tool_specs().values() if main]
    client = make_client(endpoint, count_tokens=lambda s: tokens.count_tokens(s, endpoint.model))
    messages = [Message("system", PROBE_SYSTEM), Message("user", PROBE_USER)]
    t0 = time.monotonic()
    try:
        turn = client.complete(messages, tools)
    except LlmError as e:
        report.update(ok=False, outcome="request_failed", error=str(e), error_kind=e.kind,
                      requests=e.attempts, latency_s=round(time.monotonic() - t0, 3))
        return _report(args, report, EXIT_LLM_FAILED)
    calls = list(turn.message.tool_calls)
    outcome, code = "tool_call", EXIT_OK
    if not calls:
        calls = text_tool_calls(turn.message.content, {t.name for t in tools})
        outcome, code = ("tool_call_as_text", EXIT_OK) if calls else ("no_tool_call",
                                                                       EXIT_NO_TOOLS)
    u = turn.usage
    report.update(
        ok=code == EXIT_OK, outcome=outcome, tool_calls=[c.name for c in calls],
        latency_s=round(turn.latency_s, 3), requests=turn.attempts,
        finish_reason=turn.finish_reason, server_model=turn.model,
        usage={"input": u.input_tokens, "output": u.output_tokens,
               "cache_read": u.cache_read_tokens, "cache_write": u.cache_write_tokens,
               "estimated": u.estimated},
        reply_text=turn.message.text[:200],
    )
    return _report(args, report, code)


def _report(args: argparse.Namespace, report: Mapping[str, Any], code: int) -> int:
    if args.json:
        _say(json.dumps(report, ensure_ascii=False))
        return code
    _say(f"provider: {report['provider']}  protocol: {report['protocol']}  model:"
          f" {report['model']}")
    _say(f"url:      {report['url']}")
    _say(f"api key:  {report['api_key']}")
    _say(f"latency:  {report['latency_s']:.2f}s over {report['requests']} request(s)")
    outcome = report["outcome"]
    if outcome == "request_failed":
        _say(f"FAILED:   {report['error']}")
    elif outcome == "no_tool_call":
        _say("FAILED:   model does not call tools: it answered with text instead of a tool call"
              f" ({report['reply_text']!r}); reviews need a model and server with tool calling"
              " (llama.cpp: --jinja; vLLM: --enable-auto-tool-choice)")
    else:
        how = "as text in the reply (parsed by the fallback)" if outcome == "tool_call_as_text" \
            else "natively"
        u = report["usage"]
        _say(f"OK:       model called {', '.join(report['tool_calls'])} {how}; tokens in/out"
              f" {u['input'] + u['cache_read'] + u['cache_write']}/{u['output']}"
              + (" (counted locally)" if u["estimated"] else ""))
    return code
