"""A made-up checkout laid out like UXBench's, for tests that must run without ``../shared``.

The words are ours (placeholders only); the shapes are what ``upstream.read_checkout`` parses:
module-level template strings, ``call_llm`` defaults and keywords, the GRM ``payload`` literal
and the ``truncation_levels`` ladder.
"""

from __future__ import annotations

from pathlib import Path

T1_TEMPLATE = "JUDGE\\nctx={context}\\nq={prompt}\\nr={response}\\nEND"
GRM_TEMPLATE = "GRM\\nctx={context}\\nq={prompt}\\nr={response_a}\\nANSWER"

_PROMPTS = f'''
T1 = 1
POINTWISE_GRM = """{T1_TEMPLATE}"""
'''
_CLIENT = '''
def call_llm(messages, model="x", max_tokens: int = 900, temperature: float | None = 0.3, **extra):
    return None
'''
_RUN_EVAL = '''
def _judge_task1(sample, model):
    return call_llm([{"role": "user", "content": "p"}], model=model)

def _generate_task2(sample, model):
    return call_llm(sample["messages"], model=model, temperature=0.9, max_tokens=300)

def _generate_task3(sample, model):
    return call_llm([], model=model, temperature=0.8, max_tokens=200)
'''
_GRM = '''
POINTWISE_GRM_TEMPLATE = """{template}"""

def call_pointwise_grm(prompt, endpoint, model_name="m"):
    payload = {{"model": model_name, "messages": [{{"role": "user", "content": prompt}}],
               "temperature": 0.0, "max_tokens": 3, "logprobs": True, "top_logprobs": 7}}
    return payload

def judge_one(rec):
    truncation_levels = {ladder}
    return truncation_levels
'''


def write_checkout(root: Path, *, t1_template: str = T1_TEMPLATE,
                   eval_ladder: str = "[(0, 0), (4, 50)]") -> Path:
    """Write the five files under ``root`` and return it."""
    files = {
        "src/utils/prompts.py": _PROMPTS.replace(T1_TEMPLATE, t1_template),
        "src/utils/llm_client.py": _CLIENT,
        "scripts/run_eval.py": _RUN_EVAL,
        "scripts/grm_judge/run_grm_judge_task2.py": _GRM.format(template=GRM_TEMPLATE, ladder=eval_ladder),
        "scripts/grm_judge/run_grm_judge_task3.py": _GRM.format(template=GRM_TEMPLATE,
                                                                ladder="[(0, 0, 0), (20, 10, 30)]"),
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
