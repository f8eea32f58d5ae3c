"""The LLM boundary: the client protocol, the index's calls to it, the prompts it is sent, their tokens.

- :mod:`~pathrag.llm.client`: :class:`~pathrag.LanguageModel` and :func:`~pathrag.as_language_model` (a
  ``prompt -> str`` function, sync or async, as a model), and the model that remembers its answers;
- :mod:`~pathrag.llm.calls`: the index's calls behind an answer cache, retries and a concurrency limit;
- :mod:`~pathrag.llm.prompts`: the wording of every prompt the core sends and of the answer instructions;
- :mod:`~pathrag.llm.tokens`: token counting (tiktoken, or an approximation offline).

What it may import: the top-level value modules (``_sync``, ``errors``, ``ids``, ``names``), nothing else of
``pathrag``;
every other package may import it. This file imports nothing.
"""
