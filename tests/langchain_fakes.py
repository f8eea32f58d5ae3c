"""LangChain stand-ins for the LangChain tests: a scripted, recording chat model and a small corpus.

The chat model is a real ``BaseChatModel``. Extraction prompts are answered from the ``ENTITY`` /
``LINK`` lines of the chunk (``pathrag.testing.facts.fact_answer``), keyword prompts with the capitalised words
of the question, anything else with ``answer``. Every prompt is recorded.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from pathrag import HashingEmbedder
from pathrag.llm.prompts import KEYWORDS_PROMPT
from pathrag.testing.facts import fact_answer

KEYWORDS_HEAD = KEYWORDS_PROMPT.split("\n", 1)[0]


class ScriptedChatModel(BaseChatModel):
    answer: str = "scripted answer"
    keywords: bool = True  # False: answer keyword prompts with something unusable
    prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-chat"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = "\n".join(str(m.text) for m in messages)
        self.prompts.append(prompt)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply(prompt)))])

    def reply(self, prompt: str) -> str:
        if prompt.startswith(KEYWORDS_HEAD):
            if not self.keywords:
                return "Sorry, I cannot help with that."
            question = prompt.rsplit("Question:", 1)[1]
            names = re.findall(r"(?<!^)(?<![?.!] )\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", question.strip())
            return json.dumps({"high_level": ["connections"], "low_level": names})
        extracted = fact_answer(prompt)
        return self.answer if extracted is None else extracted


def embeddings():
    from langchain_pathrag import PathRAGEmbeddings

    return PathRAGEmbeddings(HashingEmbedder(128))


HARBOUR = Document(
    id="harbour",
    metadata={"source": "harbour.txt"},
    page_content="""\
ENTITY Mara | person | Harbour pilot of Saltmere.
ENTITY Saltmere | location | A fishing town.
ENTITY Tide Board | organization | Runs the port of Saltmere.
ENTITY Gull | object | A small boat.
LINK Mara | Saltmere | Mara lives in Saltmere. | home | 6
LINK Tide Board | Mara | The Tide Board employs Mara. | employment | 8
LINK Tide Board | Saltmere | The Tide Board governs Saltmere. | governance | 7
LINK Mara | Gull | Mara owns the Gull. | ownership | 5
LINK Gull | Saltmere | The Gull is moored in Saltmere. | mooring | 4""",
)

WALL = Document(
    id="wall",
    metadata={"source": "wall.txt"},
    page_content="""\
ENTITY Ida | person | Chief engineer.
ENTITY Sea Wall | object | Flood barrier of Saltmere.
LINK Ida | Sea Wall | Ida designed the Sea Wall. | design | 7
LINK Sea Wall | Saltmere | The Sea Wall protects Saltmere. | protection | 8
LINK Tide Board | Ida | The Tide Board hired Ida. | contract | 6""",
)

QUESTION = "How is Mara connected to the Sea Wall?"
