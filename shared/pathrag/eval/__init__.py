"""The modules of the evaluation; its public API is :mod:`pathrag.evaluation`, which gathers their names.

One concept per module, in the order a run uses them:

- :mod:`~pathrag.eval.prompts`: the wording of every prompt the evaluation sends (questions, judging).
- :mod:`~pathrag.eval.parsing`: reading JSON out of a model's free-form answer.
- :mod:`~pathrag.eval.calls`: every model call: journalled, reused, limited, retried and counted.
- :mod:`~pathrag.eval.questions`: the corpus, corpus-level questions, and their file.
- :mod:`~pathrag.eval.configurations`: the systems compared, and their registry.
- :mod:`~pathrag.eval.answers`: one configuration answering one question.
- :mod:`~pathrag.eval.judging`: pairwise verdicts and their tally into win rates.
- :mod:`~pathrag.eval.report`: the summary of a run, and its HTML page.
- :mod:`~pathrag.eval.run`: the run itself (:class:`~pathrag.eval.run.Evaluation` and its settings).
- :mod:`~pathrag.eval.offline`: a free, deterministic stand-in for every model.

This file imports nothing: ``import pathrag.eval.prompts`` costs only that module.
"""
