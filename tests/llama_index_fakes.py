"""Shared scripted pieces for the LlamaIndex tests (this module holds no tests).

``ScriptedLlamaLLM`` is a real LlamaIndex ``CustomLLM`` that answers from the chunk's own facts, as
``tests.fakes`` does for the core: ``ENTITY``/``LINK``/``LATE`` lines for pathrag's extraction prompt,
``TRIPLET subject | predicate | object`` lines for ``SimpleLLMPathExtractor``'s prompt. Keyword prompts are
answered from ``keywords`` (question -> JSON), anything else with ``answer``. With ``react_tool`` set, a ReAct
agent's prompt is answered by calling that tool once with the user's message, then answering with what
it returned. Every prompt is recorded.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CompletionResponse, CompletionResponseGen, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from pathrag.llm.prompts import KEYWORDS_PROMPT
from pathrag.testing.facts import fact_answer, fact_texts

TRIPLETS_END = "\nTriplets:\n"  # SimpleLLMPathExtractor's prompt ends with the real text, then this
KEYWORDS_HEAD = KEYWORDS_PROMPT.splitlines()[0]
ANSWER = "The paths say so."


def triplets_for(text: str) -> str:
    lines = (line.partition(" ") for line in text.splitlines())
    return "\n".join(
        f"({', '.join(f.strip() for f in rest.split('|'))})" for kind, _, rest in lines if kind == "TRIPLET"
    )


class ScriptedLlamaLLM(CustomLLM):
    """Scripted answers, recorded prompts, and (async) a delay to observe concurrency."""

    keywords: dict[str, str] = Field(default_factory=dict)
    answer: str = ANSWER
    delay: float = 0.0
    fail_keywords: bool = False
    fail_on: str = ""  # extraction of a chunk containing this text raises
    react_tool: str = ""
    prompts: list[str] = Field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-llama")

    def reply(self, prompt: str) -> str:
        self.prompts.append(prompt)
        texts = fact_texts(prompt)
        if texts and self.fail_on and any(self.fail_on in text for text in texts):
            raise ConnectionError(f"the model is down for {self.fail_on!r}")
        if texts:
            return fact_answer(prompt) or ""
        if prompt.startswith(KEYWORDS_HEAD):
            if self.fail_keywords:
                raise ConnectionError("keyword model is down")
            question = prompt.rsplit("Question: ", 1)[-1].removesuffix("\nJSON:")
            return self.keywords.get(question, "I cannot tell.")
        if self.react_tool and "Action Input:" in prompt:
            talk = prompt.split("## Current Conversation")[-1]
            if "Observation:" in talk:
                observation = talk.rsplit("Observation:", 1)[1].strip().splitlines()[0]
                return f"Thought: I can answer without using any more tools.\nAnswer: {observation}"
            question = talk.split("user: ", 1)[1].splitlines()[0]
            return f"Thought: I need the graph.\nAction: {self.react_tool}\nAction Input: {json.dumps({'input': question})}"  # noqa: E501
        if prompt.endswith(TRIPLETS_END):
            return triplets_for(prompt.rsplit("Text: ", 1)[-1].removesuffix(TRIPLETS_END))
        return self.answer

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.reply(prompt))

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return CompletionResponse(text=self.reply(prompt))
        finally:
            self.in_flight -= 1

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        words = self.reply(prompt).split(" ")

        def gen() -> CompletionResponseGen:
            text = ""
            for i, word in enumerate(words):
                delta = word if i == 0 else " " + word
                text += delta
                yield CompletionResponse(text=text, delta=delta)

        return gen()

    def prompts_with(self, marker: str) -> list[str]:
        return [p for p in self.prompts if marker in p]
