"""Token counting: tiktoken when its encoding is available, an approximation when it is not.

tiktoken downloads its encoding files on first use. Offline that fails; we then warn once and count
approximately instead of raising. Anything that takes ``token_counter=`` accepts any
``str -> int`` callable, so the adapters can pass their framework's tokenizer.

>>> from pathrag.llm.tokens import approximate_token_count
>>> approximate_token_count("Alice met Bob in Saltmere.")
7
"""

from __future__ import annotations

import logging
import os
import re
import threading
import warnings
from collections.abc import Callable
from functools import lru_cache

__all__ = ["TokenCounter", "approximate_token_count", "count_tokens", "default_token_counter"]

TokenCounter = Callable[[str], int]

DEFAULT_ENCODING = "o200k_base"

logger = logging.getLogger(__name__)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
# Each match is one token: a CJK/kana/hangul character, up to five letters of a word, up to three
# digits, or one punctuation mark. One findall keeps this fast on long prompts.
_TOKEN = re.compile(f"[{_CJK}]|[^\\W\\d_{_CJK}]{{1,5}}|\\d{{1,3}}|_+|[^\\w\\s]")
_lock = threading.Lock()


def approximate_token_count(text: str) -> int:
    """A tokenizer-free estimate: a token per punctuation mark, per CJK character and per ~5 letters."""
    return len(_TOKEN.findall(text))


@lru_cache(maxsize=8)
def default_token_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """A counter for ``encoding``; if tiktoken cannot load it, the approximation (with one warning).

    ``PATHRAG_TOKENIZER=approximate`` in the environment skips tiktoken (and its download attempt).
    """
    if os.environ.get("PATHRAG_TOKENIZER", "").lower() == "approximate":
        return approximate_token_count
    with _lock:
        try:
            import tiktoken

            enc = tiktoken.get_encoding(encoding)
        except Exception as exc:  # network errors, missing cache, unknown encoding: never fatal
            warnings.warn(
                f"tiktoken encoding {encoding!r} is unavailable ({type(exc).__name__}); token counts are approximate",
                RuntimeWarning,
                stacklevel=2,
            )
            logger.debug("tiktoken failed", exc_info=True)
            return approximate_token_count

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


def count_tokens(text: str, token_counter: TokenCounter | None = None) -> int:
    """Count ``text`` with ``token_counter``, or with :func:`default_token_counter`."""
    return (token_counter or default_token_counter())(text)
