"""The prompts of the evaluation (:mod:`pathrag.eval`): question generation and pairwise judging.

They follow the protocol of the PathRAG and LightRAG papers (corpus-level questions written for imagined
users and tasks; two answers compared on five dimensions plus an overall verdict), in our own wording.
Templates use ``str.format`` placeholders; only the template text is parsed for braces, so values may
contain ``{`` and ``}`` freely.

>>> "Answer 2" in JUDGE_PROMPT.format(question="Q?", answer_1="a", answer_2="b", dimensions="-", example="{}")
True
"""

from __future__ import annotations

__all__ = [
    "CORPUS_SUMMARY_PROMPT",
    "DIMENSION_DEFINITIONS",
    "JUDGE_PROMPT",
    "QUESTIONS_PROMPT",
    "RETRY_SUFFIX",
    "USERS_PROMPT",
]

#: Step 1: a description of the corpus, written from excerpts spread over its documents.
CORPUS_SUMMARY_PROMPT = """EVALUATION SETUP: DESCRIBE THE COLLECTION
Below are excerpts taken from across a collection of documents. Write a description of the whole collection in at most \
{max_words} words: what it is about, what kinds of documents it holds, and the main people, organisations, places, \
events and themes it covers. Describe the collection; do not summarise each excerpt in turn. Output only the \
description.

Excerpts:
{excerpts}

Description:
"""

#: Step 2: imagined users of the corpus, each with tasks they would use it for.
USERS_PROMPT = """EVALUATION SETUP: USERS AND TASKS
Here is a description of a collection of documents:

{description}

Imagine {users} different people who would have a real reason to work with this collection (for example an analyst, a \
journalist, a student, a manager, a researcher: pick roles that fit the collection). For each person, name {tasks} \
distinct tasks they would use the collection for, tasks that need an understanding of the collection as a whole rather \
than one fact from it.
Reply with one JSON object and nothing else, in this form:
{{"users": [{{"user": "who they are and why they read the collection", "tasks": ["first task", "second task"]}}]}}
"""

#: Step 3: questions for one (user, task).
QUESTIONS_PROMPT = """EVALUATION SETUP: QUESTIONS
Here is a description of a collection of documents:

{description}

User: {user}
Task: {task}

Write {count} questions this user would ask about the collection while doing this task. Each question must need a \
broad understanding of the collection: connecting several documents, people or events, comparing, explaining causes \
and consequences, or drawing out themes. Avoid questions that one sentence of one document answers. Each question must \
stand on its own (no "this document", no numbering).
Reply with one JSON object and nothing else, in this form:
{{"questions": ["first question?", "second question?"]}}
"""

#: What the judge compares, one line per dimension (the keys are the JSON keys of the verdict).
DIMENSION_DEFINITIONS: dict[str, str] = {
    "comprehensiveness": "How fully does the answer cover everything the question needs, with the relevant details?",
    "diversity": (
        "How varied are the perspectives, aspects and insights the answer brings, rather than one narrow angle?"
    ),
    "logicality": (
        "How sound is the reasoning: do the steps follow from each other, and are the claims consistent and supported?"
    ),
    "relevance": (
        "How closely does the answer stay on the question asked, without drifting to material that does not help?"
    ),
    "coherence": "How well is the answer organised: does it read as one connected, clearly structured whole?",
    "overall": "All things considered, which answer serves the person who asked the question better?",
}

#: The pairwise verdict. The two answers come from different systems; the caller alternates their order.
JUDGE_PROMPT = """You are judging two answers to the same question. They were written by two different \
question-answering systems; the order in which they are shown is arbitrary and says nothing about their quality. Judge \
the content, not the length alone: a longer answer is better only if what it adds is useful and correct.

Question:
{question}

Answer 1:
{answer_1}

Answer 2:
{answer_2}

Compare the two answers on each of these dimensions and pick the better one for each:
{dimensions}

For every dimension the winner must be 1 or 2 (no ties: if they seem equal, pick the one that is even slightly \
better), with a reason of one short sentence.
Reply with one JSON object and nothing else, exactly in this form:
{example}
"""

#: Appended to a prompt whose answer could not be read, for the single retry (a different prompt, so the
#: retry is journalled as a call of its own).
RETRY_SUFFIX = """

Your previous reply to this request could not be read. Reply again with only the JSON object in the form shown above: \
no code fences, no text before or after it."""
