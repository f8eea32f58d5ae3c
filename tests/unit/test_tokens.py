"""Token counting works offline: tiktoken when it can, an approximation (warned once) when it cannot."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from pathrag.llm.tokens import approximate_token_count, count_tokens, default_token_counter


def test_approximation_counts_words_punctuation_and_cjk():
    assert approximate_token_count("") == 0
    assert approximate_token_count("a b c") == 3
    assert approximate_token_count("internationalisation") == 4  # 20 letters / 5
    assert approximate_token_count("Hello, world!") == 4
    assert approximate_token_count("東京都") == 3
    assert approximate_token_count("year 2026") == 3  # digits in groups of up to three


def test_custom_counter_is_used():
    assert count_tokens("abcdef", token_counter=len) == 6


def test_unknown_encoding_falls_back_with_one_warning():
    default_token_counter.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = default_token_counter("no-such-encoding")
        second = default_token_counter("no-such-encoding")
    assert first is approximate_token_count and second is first
    assert len([w for w in caught if "approximate" in str(w.message)]) == 1


OFFLINE = """
import socket, warnings
def refuse(*args, **kwargs):
    raise OSError("network disabled for this test")
socket.socket.connect = refuse
socket.getaddrinfo = refuse
from pathrag.llm.tokens import count_tokens
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    a = count_tokens("Alice met Bob.")
    b = count_tokens("Alice met Bob again.")
print(a, b, sum("approximate" in str(w.message) for w in caught))
"""


def test_offline_default_counter_never_raises(tmp_path):
    # A fresh interpreter with an empty tiktoken cache and no network at all.
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", OFFLINE], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    a, b, warned = map(int, done.stdout.split())
    assert 0 < a < b and warned == 1


@pytest.mark.parametrize("text", ["", " ", "\n\n", "🙂🙂", "x" * 1000])
def test_count_never_negative(text):
    assert count_tokens(text, approximate_token_count) >= 0


def test_environment_can_skip_tiktoken(monkeypatch):
    default_token_counter.cache_clear()
    monkeypatch.setenv("PATHRAG_TOKENIZER", "approximate")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no download attempt, so no fallback warning either
        assert default_token_counter() is approximate_token_count
    default_token_counter.cache_clear()
