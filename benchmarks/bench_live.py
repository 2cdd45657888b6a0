"""Live masks side by side: trgc without precompute, trgc with a warm persistent cache,
llguidance and XGrammar on the same JSONSchemaBench schemas, tokenizer and forced token ids.

Every schema of a seeded sample (`--schemas N --seed S`, drawn from every subset's schemas that
have an LLM-written valid instance) is compiled by each engine, a matcher is made and its first
mask written (time to first mask = compile + bind/matcher creation + first mask); then the
schema's first valid instance is teacher-forced and every mask is timed as it is written into
the engine's int32 bitmask buffer, the way an inference loop calls it:

  * trgc: `compile_schema(separators="compact")` (closed objects unless `--open-objects`),
    `Matcher` over a `MaskCache` shared by all
    schemas (as a server keeps one), `fill_bitmask`; no precompute;
  * trgc with a warm cache: the same, over a persistent disk cache that a fresh process
    filled before the run from a disjoint sample of schemas (`--warm-with other`, "a new
    schema built from familiar pieces": frame entries are shared by residual) or from the same
    ones (`same`: a server meeting its schemas again after a restart). It runs in the main
    process with its own empty `MaskCache` (nothing of the cold engine's is shared but the
    tokenizer's tables, as in any server), interleaved with the other engines, so that all
    are timed in the same moments of the machine's load (measured in a process of its own
    after the others, the same code gave a mask p50 of 6 to 12 us minutes apart under load
    5):
    `compile_schema(cache=)` reads compiled artifacts back (`trgc.compiler.cache`) and
    `Matcher(disk_cache=)` the mask store of each artifact (`trgc.engine.maskstore`), then
    frame entries. Its disk hits, misses and writes are reported;
  * llguidance: `LLMatcher.grammar_from_json_schema` (no flexible whitespace: `,` and `:`),
    then `LLMatcher` (llguidance builds its parser there, so both count as its compile),
    `llguidance.numpy.fill_next_token_bitmask`;
  * XGrammar: `GrammarCompiler(max_threads=1, cache_enabled=False).compile_json_schema(
    any_whitespace=False, separators=(",", ":"), strict_mode=True)` (False with
    `--open-objects`), `GrammarMatcher`,
    `fill_next_token_bitmask`; its `TokenizerInfo` is built from trgc's exact token bytes.

Every mask, and the time to first mask, is timed twice: wall time (what a caller waits,
preemptions by other jobs included) and the thread's CPU time (`time.thread_time`, the engine's
own work: on a loaded machine the fairer comparison; every engine runs on the calling thread,
so work an engine handed to threads of its own would not be counted). The targets are judged
on wall time. A mask's wall interval holds the fill and one clock read (`perf_counter`, about
0.5 us here); the thread clock is read outside it (it is a system call of about 1.7 us on the
build machine, which earlier runs added to every engine's mask). Every `advance` is timed
too (wall), and reported with the first one apart, in thread CPU time too (its clock read
around the first advance only): work an engine defers past its first mask (trgc decodes a
cached artifact's tables and its whole mask store then) shows there.

Fairness: one process, one thread, engines in turn on each schema; every engine gets the same
bytes (the instance serialised with compact separators in trgc's declared member order,
`canonical_instance`), tokenised once by the `tokenizers` library. An instance is used only if
every engine compiled its schema and accepted every forced token; otherwise it is skipped for
all engines and counted with the reason. Timings are over those common schemas; "supported"
counts are over the whole sample. Inputs, and everything the warm-ups loaded (every engine's
kernels and tables), are moved out of the cyclic GC (`gc.freeze()` after the warm-ups):
frozen before them, the objects they made were traversed by a generation-2 collection that
landed inside one timed mask (45 ms, trgc-warm's on Qwen3, the same mask in every run).

Run: .venv/bin/python benchmarks/bench_live.py --tokenizer llama3 --schemas 120 --seed 0 [--json]
"""

from __future__ import annotations

import argparse
import functools
import gc
import gzip
import inspect
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BENCH = SHARED / "corpora/jsonschemabench"
INSTANCES = SHARED / "corpora/jsonschemabench-instances"
TOKENIZERS = {
    name: SHARED / f"tokenizers/{name}/tokenizer.json.zst" for name in ("llama3", "qwen3")
}
ENGINES = ("trgc", "trgc-warm", "llguidance", "xgrammar")
DISK_CACHE_PARAMETER = "disk_cache"  # the Matcher keyword the warm-cache engine needs
# a string with minLength (a body the frame calls), a string under a regex `.`, one closing a
# nested object, one no slice fits (its residual described): every engine's first calls and
# every per-tokenizer table trgc builds on first use (its slices and their tails, and the
# tables of its class runs, `TrgcEngine.prepare`) happen here, as the peers build theirs with
# their tokenizer
WARMUP_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "string", "minLength": 1},
        "b": {"type": "integer"},
        "c": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"d": {"type": "string", "pattern": "^.*$"}},
                "required": ["d"],
            },
        },
        "e": {"type": "string", "pattern": "^[a-z ,-]+$"},
    },
    "required": ["a", "b", "c", "e"],
}
WARMUP_INSTANCE = {"a": "warm up", "b": 42, "c": [{"d": "x y"}, {"d": "z"}], "e": "a-b"}


def progress(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


# -- inputs ------------------------------------------------------------------------------


def candidates() -> list[tuple[str, str, object]]:
    """(subset, file, first valid instance) for every schema with a valid instance, sorted."""
    out = []
    for path in sorted(INSTANCES.glob("*.jsonl.gz")):
        subset = path.name.removesuffix(".jsonl.gz")
        first: dict[str, object] = {}
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                record = json.loads(line)
                if record["valid"] and record["file"] not in first:
                    first[record["file"]] = record["data"]
        out.extend((subset, name, first[name]) for name in sorted(first))
    return out


def sample(n: int, seed: int, exclude: set[tuple[str, str]] = frozenset()) -> list:
    pool = [c for c in candidates() if (c[0], c[1]) not in exclude]
    return random.Random(seed).sample(pool, min(n, len(pool)))


def load_vocab(name: str):
    """(tokenizer.json bytes, trgc TokenTable, tokenizers.Tokenizer)."""
    import tokenizers
    import zstandard

    import trgc

    path = TOKENIZERS[name]
    raw = zstandard.ZstdDecompressor().decompress(path.read_bytes(), max_output_size=1 << 30)
    table = trgc.load_tokenizer(path)
    _ = table.trie
    return raw, table, tokenizers.Tokenizer.from_str(raw.decode())


def prepare(picked, table, hf) -> list[dict]:
    """One case per sampled schema: the schema, the instance bytes every engine is forced
    through, its token ids, or the reason it cannot be forced."""
    from trgc.grammar.schema.canonical import canonical_instance

    cases = []
    for subset, name, data in picked:
        schema = json.loads((BENCH / subset / name).read_text(encoding="utf-8"))
        case = {"id": f"{subset}/{name}", "schema": schema, "ids": None, "problem": None}
        try:
            doc = canonical_instance(schema, data, "compact")
        except (RecursionError, ValueError, TypeError) as exc:
            case["problem"] = f"serialise: {type(exc).__name__}"
            cases.append(case)
            continue
        ids = hf.encode(doc.decode(), add_special_tokens=False).ids
        if b"".join(table.token_bytes(i) for i in ids) != doc:
            case["problem"] = "tokens do not spell the instance bytes"
        case["ids"] = ids
        case["bytes"] = len(doc)
        cases.append(case)
    return cases


# -- engines: start(schema) -> (fill(buffer), accept(token) -> bool), timed by the driver ----


class TrgcEngine:
    name = "trgc"

    def __init__(self, table, disk_cache=None, open_objects: bool = False) -> None:
        import trgc

        self.trgc = trgc
        self.table = table
        self.cache = trgc.MaskCache()
        self.open_objects = open_objects
        self.disk = disk_cache
        self.extra = {} if disk_cache is None else {DISK_CACHE_PARAMETER: disk_cache}
        self.compile_extra = {} if disk_cache is None else {"cache": disk_cache}
        self.buffer = np.zeros((1, (table.vocab_size + 31) // 32), dtype=np.int32)

    def compile(self, schema):
        return self.trgc.compile_schema(
            schema, separators="compact", open_objects=self.open_objects, **self.compile_extra
        )

    def prepare(self) -> None:
        """The per-tokenizer tables of every class run (`trgc.engine.runs.prepare`): built
        on first use otherwise, 10-40 ms per class inside the first mask that needs one."""
        from trgc.engine.binding import bind

        try:
            from trgc.engine import runs
        except ImportError:  # a tree before class runs (`ab_live.py` compares trees)
            return
        runs.prepare(bind(self.compile({"type": "string"}), self.table))

    def matcher(self, compiled):
        m = self.trgc.Matcher(compiled, self.table, cache=self.cache, **self.extra)
        fill = functools.partial(m.fill_bitmask, self.buffer, 0)

        def accept(token: int) -> bool:
            try:
                m.advance(token)
            except self.trgc.TrgcError:
                return False
            return True

        return fill, accept


class LlguidanceEngine:
    name = "llguidance"

    def __init__(self, raw_json: bytes) -> None:
        import llguidance
        import llguidance.numpy as lnp

        self.llg, self.lnp = llguidance, lnp
        with tempfile.NamedTemporaryFile(suffix=".json") as handle:
            handle.write(raw_json)
            handle.flush()
            self.tok = llguidance.LLTokenizer(handle.name)
        self.buffer = lnp.allocate_token_bitmask(1, self.tok.vocab_size)

    def compile(self, schema):
        """llguidance builds its parser when the matcher is made, so compiling is both."""
        grammar = self.llg.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": False}
        )
        m = self.llg.LLMatcher(self.tok, grammar, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        return m

    def matcher(self, compiled):
        fill = functools.partial(self.lnp.fill_next_token_bitmask, compiled, self.buffer, 0)
        return fill, compiled.consume_token


class XgrammarEngine:
    name = "xgrammar"

    def __init__(self, table, open_objects: bool = False) -> None:
        import xgrammar

        self.xgr = xgrammar
        vocab = [table.token_bytes(i) for i in range(table.vocab_size)]
        info = xgrammar.TokenizerInfo(
            vocab, xgrammar.VocabType.RAW, vocab_size=table.vocab_size,
            stop_token_ids=list(table.eos_ids),
        )  # fmt: skip
        self.compiler = xgrammar.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        self.strict = not open_objects
        self.buffer = np.zeros((1, (table.vocab_size + 31) // 32), dtype=np.int32)

    def compile(self, schema):
        return self.compiler.compile_json_schema(
            json.dumps(schema), any_whitespace=False, separators=(",", ":"), strict_mode=self.strict
        )

    def matcher(self, compiled):
        m = self.xgr.GrammarMatcher(compiled)
        return functools.partial(m.fill_next_token_bitmask, self.buffer, 0), m.accept_token


def run_case(engine, case) -> dict:
    """Compile, make a matcher and write its first mask (timed together: time to first mask),
    then advance every forced token and time the mask after each."""
    perf, cpu = time.perf_counter, time.thread_time
    started, started_cpu = perf(), cpu()
    try:
        compiled = engine.compile(case["schema"])
        compile_s = perf() - started
        fill, accept = engine.matcher(compiled)
        fill()
    except Exception as exc:  # each engine's own unsupported-schema errors, whatever their type
        code = getattr(exc, "code", None)
        reason = code if isinstance(code, str) else f"{type(exc).__name__}: {str(exc)[:60]}"
        return {"status": "unsupported", "reason": reason}
    first_s, first_cpu_s = perf() - started, cpu() - started_cpu
    out = {"status": "ok", "compile_s": compile_s, "first_mask_s": first_s,
           "first_mask_cpu_s": first_cpu_s, "mask_s": [],
           "mask_cpu_s": [], "advance_s": []}  # fmt: skip
    if case["ids"] is None or case["problem"]:
        return out
    times, cpu_times, advances = out["mask_s"], out["mask_cpu_s"], out["advance_s"]
    for position, token in enumerate(case["ids"]):
        begin_cpu = cpu() if not position else 0.0  # the first advance carries deferred work
        begin = perf()
        accepted = accept(token)
        advances.append(perf() - begin)
        if not position:
            out["first_advance_cpu_s"] = cpu() - begin_cpu
        if not accepted:
            out["status"] = "rejected"
            out["reason"] = f"token {position} of {len(case['ids'])}"
            break
        # the thread clock is read outside the wall interval: on this kind of virtual machine
        # it is a system call of about 1.7 us, which would be added to every engine's mask
        begin_cpu = cpu()
        begin = perf()
        fill()
        end = perf()
        cpu_times.append(cpu() - begin_cpu)
        times.append(end - begin)
    return out


def warm_up(engine, hf) -> None:
    """JIT, lazy tables and first-call costs, on a schema that is not in the sample."""
    from trgc.grammar.schema.canonical import canonical_instance

    doc = canonical_instance(WARMUP_SCHEMA, WARMUP_INSTANCE, "compact").decode()
    case = {"schema": WARMUP_SCHEMA, "ids": hf.encode(doc, add_special_tokens=False).ids,
            "problem": None}  # fmt: skip
    for _ in range(2):
        run_case(engine, case)
    if hasattr(engine, "prepare"):
        engine.prepare()


# -- statistics --------------------------------------------------------------------------


def stats(seconds: list[float]) -> dict | None:
    if not seconds:
        return None
    a = np.asarray(seconds) * 1e3
    return {
        "n": int(a.size),
        "mean_ms": float(a.mean()),
        "p50_ms": float(np.percentile(a, 50)),
        "p90_ms": float(np.percentile(a, 90)),
        "p99_ms": float(np.percentile(a, 99)),
        "max_ms": float(a.max()),
        "sum_ms": float(a.sum()),
    }


def summarise(cases: list[dict], results: dict[str, list[dict]]) -> dict:
    """Per engine: supported over the sample; compile, first mask and masks over the cases
    every engine ran to the end; trgc's ratios to each peer."""
    engines = [e for e, r in results.items() if isinstance(r, list)]
    skipped: dict[str, int] = {}
    common = []
    for i, case in enumerate(cases):
        outcomes = {e: results[e][i] for e in engines}
        failing = [f"{e} {o['status']}" for e, o in outcomes.items() if o["status"] != "ok"]
        if case["problem"]:
            failing.insert(0, case["problem"])
        if failing:
            reason = ", ".join(failing)
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            common.append(i)
    out: dict = {"sample": len(cases), "common_schemas": len(common),
                 "skipped": dict(sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])))}  # fmt: skip
    per: dict = {}
    for e in (e for e in ENGINES if e in results):
        r = results[e]
        if not isinstance(r, list):
            per[e] = {"unavailable": r}
            continue
        own = [o for o in r if o["status"] != "unsupported"]
        unsupported: dict[str, int] = {}
        for o in r:
            if o["status"] == "unsupported":
                unsupported[o["reason"]] = unsupported.get(o["reason"], 0) + 1
        per[e] = {
            "supported": len(own),
            "unsupported": unsupported,
            "rejected_instances": sum(o["status"] == "rejected" for o in r),
            "compile_own": stats([o["compile_s"] for o in own]),
            "compile": stats([r[i]["compile_s"] for i in common]),
            "first_mask": stats([r[i]["first_mask_s"] for i in common]),
            "first_mask_cpu": stats([r[i]["first_mask_cpu_s"] for i in common]),
            "masks": stats([t for i in common for t in r[i]["mask_s"]]),
            "masks_cpu": stats([t for i in common for t in r[i]["mask_cpu_s"]]),
            "advance": stats([t for i in common for t in r[i]["advance_s"]]),
            "first_advance": stats([r[i]["advance_s"][0] for i in common if r[i]["advance_s"]]),
            "first_advance_cpu": stats(
                [r[i]["first_advance_cpu_s"] for i in common if "first_advance_cpu_s" in r[i]]
            ),  # fmt: skip
        }
    out["engines"] = per
    out["ratios"] = ratios(results, common, per)
    in_common = set(common)
    out["cases"] = [
        {"id": case["id"], "bytes": case.get("bytes"), "tokens": len(case["ids"] or ()),
         "problem": case["problem"], "common": i in in_common,
         "engines": {e: {k: v for k, v in results[e][i].items()
                         if k not in ("mask_s", "mask_cpu_s", "advance_s")}
                     | {"masks": len(results[e][i].get("mask_s", ()))} for e in engines}}
        for i, case in enumerate(cases)
    ]  # fmt: skip
    return out


# what each trgc engine is compared with; trgc-warm with trgc too: what the disk cache costs or
# saves on these schemas (with `--warm-with other` it finds next to nothing, so above 1 is its
# own overhead: a mask p50 of 2.4x before the mask store stopped copying walked masks)
PEERS = {"trgc": ("llguidance", "xgrammar"), "trgc-warm": ("trgc", "llguidance", "xgrammar")}


def ratios(results, common, per) -> dict:
    """trgc (and trgc-warm) over each of its `PEERS`: below 1 means it is faster."""
    out: dict = {}
    fields = (("compile", "p50_ms"), ("compile", "p90_ms"), ("first_mask", "p50_ms"),
              ("first_mask_cpu", "p50_ms"),
              ("masks", "mean_ms"), ("masks", "p50_ms"), ("masks", "p99_ms"),
              ("masks", "max_ms"), ("masks_cpu", "mean_ms"), ("masks_cpu", "p50_ms"),
              ("masks_cpu", "p99_ms"))  # fmt: skip
    for mine, peers in PEERS.items():
        if not isinstance(results.get(mine), list) or not common:
            continue
        for peer in peers:
            if not isinstance(results.get(peer), list):
                continue
            row = {
                f"{what} {q.removesuffix('_ms')}": per[mine][what][q] / per[peer][what][q]
                for what, q in fields
            }
            per_schema = [
                results[mine][i]["compile_s"] / results[peer][i]["compile_s"] for i in common
            ]
            row["compile median of per-schema ratios"] = float(np.median(per_schema))
            row["compile sum"] = per[mine]["compile"]["sum_ms"] / per[peer]["compile"]["sum_ms"]
            out[f"{mine} / {peer}"] = row
    return out


TARGETS = (  # (label, ratio key, peer, bound) from issue 14
    ("compile p50 <= 1.0x llguidance", "compile p50", "trgc / llguidance", 1.0),
    ("time to first mask p50 <= 1.0x llguidance", "first_mask p50", "trgc / llguidance", 1.0),
    ("mask mean <= 0.5x llguidance", "masks mean", "trgc / llguidance", 0.5),
    ("mask p99 <= 0.5x llguidance", "masks p99", "trgc / llguidance", 0.5),
    ("mask p50 <= 1.0x XGrammar", "masks p50", "trgc / xgrammar", 1.0),
    ("warm cache: mask p50 <= 0.5x XGrammar", "masks p50", "trgc-warm / xgrammar", 0.5),
    ("warm cache: time to first mask <= 0.5x llguidance", "first_mask p50",
     "trgc-warm / llguidance", 0.5),
)  # fmt: skip


def targets(summary: dict, warm_with: str) -> list[dict]:
    """Each target's ratio and verdict; a warm one says how the cache was filled (`same`: by
    the schemas measured; `other`: by a disjoint sample, a new schema from familiar pieces)."""
    out = []
    for label, key, pair, bound in TARGETS:
        row = summary["ratios"].get(pair)
        value = None if row is None else row[key]
        met = None if value is None else value <= bound
        if pair.startswith("trgc-warm"):
            label = f"{label} (--warm-with {warm_with})"
        out.append({"target": label, "ratio": value, "met": met})
    return out


# -- the warm-cache engine in fresh processes -----------------------------------------------


def disk_cache_supported() -> bool:
    import trgc

    return DISK_CACHE_PARAMETER in inspect.signature(trgc.Matcher).parameters


def worker(args) -> None:
    """`--worker populate`: trgc with a disk cache over the warm cases in `--work`, in a
    process of its own, filling `--cache-dir`; its disk counters as JSON on stdout."""
    from trgc.engine.diskcache import DiskCache

    work = json.loads(Path(args.work).read_text(encoding="utf-8"))
    _, table, _ = load_vocab(work["tokenizer"])
    gc.collect()
    gc.freeze()
    disk = DiskCache(args.cache_dir)
    engine = TrgcEngine(table, disk, work["open_objects"])
    for case in work["warm"]:
        run_case(engine, case)
    disk.flush()
    json.dump({"disk": disk.stats.to_dict()}, sys.stdout)


def populate_warm(tokenizer: str, warm_cases, cache: str, open_objects: bool) -> str | None:
    """Fill the disk cache `cache` from `warm_cases` in a fresh process; None when done, else
    why the warm engine is unavailable."""
    if not disk_cache_supported():
        return f"unavailable: trgc.Matcher takes no {DISK_CACHE_PARAMETER!r} argument yet"
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work.json"
        strip = lambda cs: [{k: c[k] for k in ("schema", "ids", "problem")} for c in cs]  # noqa: E731
        document = {"tokenizer": tokenizer, "warm": strip(warm_cases),
                    "open_objects": open_objects}  # fmt: skip
        work.write_text(json.dumps(document))
        progress("trgc-warm: populating the disk cache in a fresh process")
        done = subprocess.run(
            [sys.executable, __file__, "--worker", "populate", "--work", str(work),
             "--cache-dir", cache],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if done.returncode:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    disk = json.loads(done.stdout)["disk"]
    progress(f"trgc-warm populate: disk hits {disk['hits']}, misses {disk['misses']}, "
             f"writes {disk['writes']}, refused {disk['refused']}")  # fmt: skip
    return None


# -- driver and report -------------------------------------------------------------------


def make_engines(names, raw, table, open_objects: bool, warm) -> dict:
    """The engines in `ENGINES` order; `warm` is the populated `DiskCache` of trgc-warm, or why
    it is unavailable."""
    made: dict = {}
    for name in (n for n in ENGINES if n in names):
        if name == "trgc-warm":
            made[name] = warm if isinstance(warm, str) else TrgcEngine(table, warm, open_objects)
            continue
        started = time.perf_counter()
        try:
            if name == "trgc":
                made[name] = TrgcEngine(table, open_objects=open_objects)
            elif name == "llguidance":
                made[name] = LlguidanceEngine(raw)
            else:
                made[name] = XgrammarEngine(table, open_objects)
        except ImportError:
            made[name] = "not installed (pip install '.[bench]', torch==2.13.0 first)"
            continue
        progress(f"{name}: tokenizer set up in {time.perf_counter() - started:.2f} s")
    return made


def run_engines(engines: dict, cases, hf, profile: str | None):
    """Every engine in turn on each case (after a warm-up each); (results, profiler). With
    `profile`, the runs of trgc are profiled, or trgc-warm's when it runs without trgc."""
    for name, engine in engines.items():
        if not isinstance(engine, str):
            warm_up(engine, hf)
            if name == "trgc-warm":
                engine.disk.flush()
                engine.disk.stats = type(engine.disk.stats)()  # count the measured run only
    # after the warm-ups: what they loaded (kernels, tables, every engine's) is frozen too
    gc.collect()
    gc.freeze()
    results: dict = {n: [] if not isinstance(e, str) else e for n, e in engines.items()}
    profiler = None
    profiled = "trgc" if "trgc" in engines else "trgc-warm"
    if profile and not isinstance(engines.get(profiled, "absent"), str):
        import cProfile

        profiler = cProfile.Profile()
    started = time.perf_counter()
    for k, case in enumerate(cases, 1):
        line = []
        for name, engine in engines.items():
            if isinstance(engine, str):
                continue
            if profiler is not None and name == profiled:
                outcome = profiler.runcall(run_case, engine, case)
            else:
                outcome = run_case(engine, case)
            results[name].append(outcome)
            line.append(f"{name} {outcome['status']}")
        progress(f"[{k}/{len(cases)}] {case['id']}: " + ", ".join(line)
                 + f"  ({time.perf_counter() - started:.0f} s)")  # fmt: skip
    return results, profiler


def bench(args) -> dict:
    picked = sample(args.schemas, args.seed)
    raw, table, hf = load_vocab(args.tokenizer)
    cases = prepare(picked, table, hf)
    warm_pick = picked if args.warm_with == "same" else sample(
        args.schemas, args.seed + 1, {(s, f) for s, f, _ in picked}
    )  # fmt: skip
    warm_cases = prepare(warm_pick, table, hf) if "trgc-warm" in args.engines else []
    with tempfile.TemporaryDirectory() as tmp:
        warm = None
        if "trgc-warm" in args.engines:
            from trgc.engine.diskcache import DiskCache

            cache = args.cache_dir or str(Path(tmp) / "cache")
            failed = populate_warm(args.tokenizer, warm_cases, cache, args.open_objects)
            warm = failed or DiskCache(cache)
        engines = make_engines(args.engines, raw, table, args.open_objects, warm)
        results, profiler = run_engines(engines, cases, hf, args.profile)
        if warm is not None and not isinstance(warm, str):
            disk = warm.stats
            progress(f"trgc-warm measure: disk hits {disk.hits}, misses {disk.misses}, "
                     f"writes {disk.writes}, refused {disk.refused}")  # fmt: skip
            warm.flush(60)  # its background writes end before the directory is removed
    if profiler is not None:
        import pstats

        profiler.dump_stats(args.profile)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    summary = summarise(cases, results)
    summary["targets"] = targets(summary, args.warm_with)
    summary["settings"] = {
        "tokenizer": args.tokenizer, "vocab_size": table.vocab_size, "schemas": args.schemas,
        "seed": args.seed, "warm_with": args.warm_with, "open_objects": args.open_objects,
        "versions": versions(), "load_average": os.getloadavg(),
    }  # fmt: skip
    return summary


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("trgc", "llguidance", "xgrammar", "numba", "numpy"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def fmt_ms(x: float) -> str:
    return f"{x * 1e3:,.1f} us" if x < 1 else f"{x:,.2f} ms"


def report(s: dict) -> str:
    st = s["settings"]
    lines = [
        f"== {st['tokenizer']} (V={st['vocab_size']}), {s['sample']} schemas sampled "
        f"(seed {st['seed']}), {s['common_schemas']} run by every engine; "
        f"load {st['load_average'][0]:.1f}",
    ]
    rows = [("schemas supported", lambda e: str(e["supported"]))]
    for label, what, q in (("compile p50", "compile", "p50_ms"), ("compile p90", "compile", "p90_ms"),
                           ("time to first mask p50", "first_mask", "p50_ms"),
                           ("time to first mask p50 (thread CPU)", "first_mask_cpu", "p50_ms"),
                           ("mask mean", "masks", "mean_ms"), ("mask p50", "masks", "p50_ms"),
                           ("mask p99", "masks", "p99_ms"), ("mask max", "masks", "max_ms"),
                           ("mask mean (thread CPU)", "masks_cpu", "mean_ms"),
                           ("mask p50 (thread CPU)", "masks_cpu", "p50_ms"),
                           ("mask p99 (thread CPU)", "masks_cpu", "p99_ms"),
                           ("advance p50", "advance", "p50_ms"),
                           ("first advance p50", "first_advance", "p50_ms"),
                           ("first advance p50 (thread CPU)", "first_advance_cpu", "p50_ms")):  # fmt: skip
        rows.append((label, lambda e, w=what, q=q: fmt_ms(e[w][q]) if e.get(w) else "-"))
    names = [n for n in ENGINES if n in s["engines"]]
    lines.append("| | " + " | ".join(names) + " |")
    lines.append("|---|" + "---:|" * len(names))
    for label, get in rows:
        cells = []
        for n in names:
            e = s["engines"][n]
            cells.append("unavailable" if "unavailable" in e else get(e))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    masks = {n: s["engines"][n].get("masks") for n in names}
    lines.append("masks timed: " + ", ".join(f"{n} {m['n']}" for n, m in masks.items() if m))
    for n in names:
        e = s["engines"][n]
        if "unavailable" in e:
            lines.append(f"{n}: {e['unavailable']}")
        elif e["unsupported"]:
            lines.append(f"{n} unsupported: {e['unsupported']}")
    lines.append(f"skipped for every engine: {s['skipped']}")
    for pair, row in s["ratios"].items():
        lines.append(f"{pair}: " + ", ".join(f"{k} {v:.2f}x" for k, v in row.items()))
    for t in s["targets"]:
        verdict = "n/a" if t["met"] is None else ("met" if t["met"] else "NOT met")
        ratio = "" if t["ratio"] is None else f" ({t['ratio']:.2f}x)"
        lines.append(f"target {t['target']}: {verdict}{ratio}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", choices=sorted(TOKENIZERS), default="llama3")
    parser.add_argument("--schemas", type=int, default=120, help="schemas in the sample")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--engines", nargs="+", choices=ENGINES, default=list(ENGINES))
    parser.add_argument("--warm-with", choices=("other", "same"), default="other",
                        help="schemas that fill the disk cache before the warm run")  # fmt: skip
    parser.add_argument("--cache-dir", help="disk cache of the warm run (default: a temporary one)")
    parser.add_argument("--open-objects", action="store_true", help="admit undeclared members "
                        "(trgc open_objects, XGrammar strict_mode=False; llguidance always does)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    parser.add_argument("--save", metavar="FILE", help="also write the raw numbers to FILE")
    parser.add_argument("--profile", metavar="FILE", help="cProfile trgc's runs (trgc-warm's without trgc) into FILE and "
                        "print the top functions on stderr (slows trgc down: not for timing)")  # fmt: skip
    parser.add_argument("--worker", choices=("populate",), help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    summary = bench(args)
    if args.save:
        Path(args.save).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(json.dumps(summary, indent=2, sort_keys=True) if args.json else report(summary))


if __name__ == "__main__":
    main()
