"""Scripted stand-ins for a language model, driven by plain-text facts written into the chunks.

A chunk line ``ENTITY name | type | description`` or ``LINK source | target | description | keywords |
strength`` comes back as the matching extraction record, in the format the prompt asks for; ``LATE ...``
(same fields as ENTITY) only comes back when the model is asked to glean (the paper's prompt): see
:mod:`pathrag.testing.facts`, which builds the answers by hand, so the tests check the real parser and
pipeline.
"""

from __future__ import annotations

import asyncio

from pathrag.testing.facts import fact_answer, fact_texts


class Crash(BaseException):
    """Stands for the process dying: not an Exception, so nothing retries or swallows it."""


class ScriptedLLM:
    """An async model answering extraction, gleaning and summary prompts from the chunk's facts."""

    def __init__(
        self,
        *,
        name: str = "scripted",
        delay: float = 0.0,
        fail_times: dict[str, int] | None = None,
        always_fail: tuple[str, ...] = (),
        crash_on_call: int | None = None,
    ) -> None:
        self.name = name
        self.delay = delay
        self.fail_times = dict(fail_times or {})
        self.always_fail = always_fail
        self.crash_on_call = crash_on_call
        self.prompts: list[str] = []
        self.in_flight = self.max_in_flight = 0

    @property
    def calls(self) -> int:
        return len(self.prompts)

    def complete(self, prompt: str) -> str:
        return asyncio.run(self.acomplete(prompt))

    async def acomplete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.crash_on_call is not None and len(self.prompts) == self.crash_on_call:
            raise Crash(f"killed on call {self.crash_on_call}")
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if prompt.rstrip().endswith("Merged description:"):
                listed = [line[2:] for line in prompt.split("Descriptions:")[-1].splitlines() if line.startswith("- ")]
                return f"SUMMARY of {len(listed)} descriptions, starting: {listed[-1][:30]}"
            text = "\n".join(fact_texts(prompt))
            for marker in self.always_fail:
                if marker in text:
                    raise ConnectionError(f"permanent failure for {marker}")
            for marker, left in self.fail_times.items():
                if marker in text and left > 0:
                    self.fail_times[marker] = left - 1
                    raise TimeoutError(f"transient failure for {marker}")
            return fact_answer(prompt) or "<|COMPLETE|>"
        finally:
            self.in_flight -= 1


class EndpointNamed:
    """Offline vectors under an endpoint's name: a store built with it records ``openai:text-embedding-3-small``,
    the embeddings only a provider can make (no network: the vectors are pathrag's hashing ones)."""

    name = "openai:text-embedding-3-small"

    def __init__(self) -> None:
        from pathrag import HashingEmbedder

        self.vectors = HashingEmbedder(256)

    def embed(self, texts):
        return self.vectors.embed(texts)

    async def aembed(self, texts):
        return self.vectors.embed(texts)
