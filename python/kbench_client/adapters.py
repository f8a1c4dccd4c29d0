"""Reward functions for trainers, each a few lines over Client (docs/service.md).

    verl:      custom_reward_function.path=.../adapters.py, name=compute_score, with KBENCH_URL
               (and KBENCH_TOKEN) in the environment; ground_truth is the reference's code.
    TRL:       GRPOTrainer(reward_funcs=[trl_reward(client, references)], ...)
    verifiers: load_environment(url, token, dataset) gives a vf.SingleTurnEnv whose rubric is kbench.
A masked verdict (kbench's own failure, the reference's, a problem that does not fit the device)
gives None where the trainer accepts it, else 0 with the verdict logged as masked.
"""

import os
import re

from . import Client, reward

_FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.DOTALL)


def extract_code(text):
    """The last fenced Python block of a completion (the whole text when there is none)."""
    blocks = _FENCE.findall(text or "")
    return blocks[-1] if blocks else (text or "")


def _client():
    return Client(os.environ.get("KBENCH_URL", "http://127.0.0.1:8000"), os.environ.get("KBENCH_TOKEN"))


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """verl's custom reward function: ground_truth is the reference's code."""
    value = reward(_client().evaluate(ground_truth, extract_code(solution_str)))
    return 0.0 if value is None else value


def trl_reward(client, references):
    """A TRL reward function: references maps each prompt to its reference's code."""

    def kbench_reward(prompts, completions, **kwargs):
        pairs = [(references[p], extract_code(c if isinstance(c, str) else c[-1]["content"]))
                 for p, c in zip(prompts, completions)]
        return [reward(v) for v in client.evaluate_many(pairs)]

    return kbench_reward


def load_environment(url="http://127.0.0.1:8000", token=None, dataset=None, **kwargs):
    """A verifiers environment whose reward is kbench's verdict (needs the verifiers package);
    dataset rows have "question" (the prompt) and "answer" (the reference's code)."""
    import verifiers as vf

    client = Client(url, token)

    def kbench_score(completion, answer, **_):
        text = completion[-1]["content"] if isinstance(completion, list) else completion
        value = reward(client.evaluate(answer, extract_code(text)))
        return 0.0 if value is None else value

    return vf.SingleTurnEnv(dataset=dataset, rubric=vf.Rubric(funcs=[kbench_score]), **kwargs)
