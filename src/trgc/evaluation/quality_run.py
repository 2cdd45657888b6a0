"""The quality experiment: every task under every arm, decoded by trgc's normative sampler.

Arms (the report's "Quality experiment design" announces four arms without listing them; these
are the three the issue asks for):

* `unconstrained`: the task prompt; the only constraint is "any UTF-8 text" (`ANY_TEXT`), so
  the model's own choice is taken at every step except where it would emit a special token
  other than EOS or break UTF-8;
* `constrained`: the task prompt under the trj-1 artifact of the task's schema; plain tasks
  keep `ANY_TEXT` (a constraint should not engage where no structure is asked for);
* `tool`: as `constrained`, except that arithmetic tasks ask for a tinycalc-1 expression
  (`tool_prompt`), constrained by the task's `tool_grammar`, and trgc's tinycalc computes the
  answer.

Every run records completion, the intervention metric I (mean over steps of the unmasked
top logit minus the chosen token's logit, i.e. log p(x*) - log p(x) under the unmasked
distribution), tokens and wall-clock latency. Runs with the same prompt, constraint, token
budget and sampler settings are decoded once and shared between arms (decoding is
deterministic given the seed), which the run records say (`shared`).

The model is anything with `name`, `table`, `prompt_ids(prompt)` and `logits(prompt_ids)`
(a `LogitsSource`); `HFModel` wraps a loaded Hugging Face model, tests use stand-ins.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from trgc.artifact.model import Artifact
from trgc.compiler.build import compile_grammar
from trgc.compiler.schema import compile_schema
from trgc.decode.generate import decode
from trgc.decode.logits import LogitsSource
from trgc.decode.sampler import SamplerSettings
from trgc.engine.cache import MaskCache
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError
from trgc.evaluation.quality_score import score
from trgc.evaluation.quality_tasks import Task
from trgc.tokenizer.table import TokenTable

ARMS = ("unconstrained", "constrained", "tool")
ANY_TEXT = "%trg 1\n%start text\ntext ::= [\\u{0}-\\u{10FFFF}]* ;\n"


class QualityModel(Protocol):
    name: str
    table: TokenTable

    def prompt_ids(self, prompt: str) -> list[int]: ...
    def logits(self, prompt_ids: list[int]) -> LogitsSource: ...


class HFModel:
    """A `LoadedModel` (trgc.integrations.smollm2) as a `QualityModel`."""

    def __init__(self, loaded: Any) -> None:
        self.loaded = loaded
        self.name = loaded.name
        self.table = loaded.table

    def prompt_ids(self, prompt: str) -> list[int]:
        from trgc.integrations.model_logits import encode_prompt

        return encode_prompt(self.loaded.hf_tokenizer, prompt)

    def logits(self, prompt_ids: list[int]) -> LogitsSource:
        from trgc.integrations.model_logits import ModelLogits

        return ModelLogits(self.loaded.model, prompt_ids, self.table.vocab_size, self.name)


@dataclass(frozen=True)
class Plan:
    """What one (task, arm) decodes: prompt, constraint name and artifact, tool use."""

    prompt: str
    constraint: str  # "none" (ANY_TEXT), "schema" or "tinycalc"
    artifact: Artifact
    tool: bool


@dataclass
class Run:
    """One (task, arm) result. `output` is kept for diagnostics; reports never show it."""

    task: str
    kind: str
    arm: str
    constraint: str
    shared: bool
    stop: str
    completed: bool
    tokens: int
    latency_s: float
    intervention: float | None
    syntax: bool | None
    schema: bool | None
    profile: bool | None
    correct: bool
    fields: float | None
    output: str

    def public(self) -> dict:
        """The record without the output text (for reports)."""
        doc = asdict(self)
        del doc["output"]
        return doc


class Artifacts:
    """Compiled constraints, each compiled once: ANY_TEXT, schemas, tool grammars."""

    def __init__(self) -> None:
        self._memo: dict[str, Artifact] = {}
        self.compile_s = 0.0

    def _get(self, key: str, build: Callable[[], Artifact]) -> Artifact:
        if key not in self._memo:
            start = time.perf_counter()
            self._memo[key] = build()
            self.compile_s += time.perf_counter() - start
        return self._memo[key]

    def any_text(self) -> Artifact:
        return self._get("any", lambda: compile_grammar(ANY_TEXT))

    def schema(self, task: Task) -> Artifact:
        text = json.dumps(task.schema, sort_keys=True, separators=(",", ":"))
        return self._get(
            "schema:" + text, lambda: compile_schema(task.schema, source=task.schema_path)
        )

    def grammar(self, text: str) -> Artifact:
        return self._get("grammar:" + text, lambda: compile_grammar(text))


def plan(task: Task, arm: str, artifacts: Artifacts) -> Plan:
    """The prompt and constraint of `task` under `arm` (see the module docstring)."""
    if arm not in ARMS:
        raise TrgcError("E_USAGE", f"unknown arm {arm!r}; arms: {', '.join(ARMS)}")
    if arm == "unconstrained" or task.kind == "plain":
        return Plan(task.prompt, "none", artifacts.any_text(), False)
    if arm == "tool" and task.kind == "arithmetic":
        return Plan(
            task.tool_prompt or "", "tinycalc", artifacts.grammar(task.tool_grammar or ""), True
        )
    return Plan(task.prompt, "schema", artifacts.schema(task), False)


def parse_arms(spec: str) -> list[str]:
    """`all` or a comma-separated list of arm names, in ARMS order."""
    if spec == "all":
        return list(ARMS)
    names = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [n for n in names if n not in ARMS]
    if unknown or not names:
        raise TrgcError(
            "E_USAGE", f"unknown arm(s) {unknown or spec!r}; use all or some of {', '.join(ARMS)}"
        )
    return [a for a in ARMS if a in names]


@dataclass
class Decoded:
    output: bytes
    end: dict
    latency_s: float


def run_quality(
    tasks: list[Task],
    arms: list[str],
    model: QualityModel,
    *,
    settings: SamplerSettings,
    seed: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> tuple[list[Run], dict]:
    """Decode and score every (task, arm); returns the runs and run-wide facts (compile time,
    unique decodes)."""
    artifacts = Artifacts()
    cache = MaskCache()
    decoded: dict[str, Decoded] = {}
    runs: list[Run] = []
    total = len(tasks) * len(arms)
    for task in tasks:
        for arm in arms:
            p = plan(task, arm, artifacts)
            key = hashlib.sha256(
                json.dumps([p.prompt, p.artifact.sha256, task.max_tokens]).encode()
            ).hexdigest()
            shared = key in decoded
            if not shared:
                ids = model.prompt_ids(p.prompt)
                start = time.perf_counter()
                result = decode(
                    Matcher(p.artifact, model.table, cache=cache),
                    model.table,
                    model.logits(ids),
                    settings=settings,
                    seed=seed,
                    max_tokens=task.max_tokens,
                )
                decoded[key] = Decoded(result.output, result.end, time.perf_counter() - start)
            d = decoded[key]
            if task.kind == "plain":
                target = None
            elif p.constraint == "none":  # unconstrained output is judged by the task's schema
                target = artifacts.schema(task)
            else:
                target = p.artifact
            s = score(task, p.tool, d.output, target)
            runs.append(
                Run(
                    task=task.id,
                    kind=task.kind,
                    arm=arm,
                    constraint=p.constraint,
                    shared=shared,
                    stop=d.end["stop"],
                    completed=bool(d.end["completed"]),
                    tokens=int(d.end["tokens"]),
                    latency_s=d.latency_s,
                    intervention=d.end["intervention"],
                    syntax=s.syntax,
                    schema=s.schema,
                    profile=s.profile,
                    correct=s.correct,
                    fields=s.fields,
                    output=d.output.decode("utf-8", errors="replace"),
                )
            )
            if progress is not None:
                progress(len(runs), total, f"{task.id} / {arm}")
    facts = {"compile_s": artifacts.compile_s, "decodes": len(decoded), "runs": len(runs)}
    return runs, facts
