"""trj-1 coverage over real schemas (JSONSchemaBench) and the MaskBench-style instance check.

For every schema of every subset: compile it and record compiled / unsupported (by keyword) /
failed (by code) and the compile time. For every compiled schema with upstream instances,
each valid instance (re-serialised canonically for the schema) must be accepted and each
invalid one rejected; a schema *passes* when all its instances do. An accepted invalid
instance is a soundness failure and is listed by schema and instance index.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from trgc.artifact.check import check
from trgc.compiler.schema import compile_schema
from trgc.errors import TrgcError
from trgc.grammar.schema.canonical import canonical_instance
from trgc.limits import Limits, file_cap, read_file


@dataclass
class SchemaResult:
    subset: str
    file: str
    outcome: str  # "compiled", "unsupported", or an error code
    keyword: str | None
    compile_seconds: float
    valid: tuple[int, int] = (0, 0)  # (accepted, total)
    invalid: tuple[int, int] = (0, 0)  # (rejected, total)
    wrongly_accepted: list[int] = field(
        default_factory=list
    )  # indices of accepted invalid instances
    order_only: int = 0  # valid instances accepted in declared order but refused as written
    annotations: tuple[str, ...] = ()  # names read as annotations (annotate mode)
    internal: str | None = None  # the exception of an internal error (outcome E_INTERNAL)
    peer_compiled: bool | None = None  # None: no peer was run
    peer_error: str | None = None
    peer_valid: tuple[int, int] = (0, 0)
    peer_invalid: tuple[int, int] = (0, 0)

    @property
    def has_instances(self) -> bool:
        return self.valid[1] + self.invalid[1] > 0

    @property
    def peer_passes(self) -> bool:
        """The peer's verdict on its own instance counts (trgc checks none where it refuses)."""
        return (
            bool(self.peer_compiled)
            and self.peer_valid[1] + self.peer_invalid[1] > 0
            and self.peer_valid[0] == self.peer_valid[1]
            and self.peer_invalid[0] == self.peer_invalid[1]
        )

    @property
    def passes(self) -> bool:
        return (
            self.outcome == "compiled"
            and self.has_instances
            and self.valid[0] == self.valid[1]
            and self.invalid[0] == self.invalid[1]
        )


def read_instances(path: Path) -> dict[str, list[tuple[bool, object]]]:
    """`file -> [(valid, data), ...]` from one `<Subset>.jsonl.gz`: the file and its
    decompressed text are each capped as a benchmark file (the cap is checked while
    inflating), and a record nested past Python's recursion limit is refused like any other."""
    out: dict[str, list[tuple[bool, object]]] = {}
    try:
        text = _gunzip(read_file(path, "benchmark"), file_cap("benchmark"), path)
        for line in text.decode("utf-8").splitlines():
            record = json.loads(line)
            out.setdefault(record["file"], []).append((bool(record["valid"]), record["data"]))
    except (ValueError, KeyError, TypeError, RecursionError, zlib.error) as exc:
        raise TrgcError("E_IO", f"cannot read instances: {exc}", source=str(path)) from None
    return out


def _gunzip(data: bytes, cap: int, path: Path) -> bytes:
    """The members of gzip `data` inflated, refused once more than `cap` bytes come out."""
    out = bytearray()
    while data:
        inflate = zlib.decompressobj(wbits=31)
        out += inflate.decompress(data, cap + 1 - len(out))
        if len(out) > cap or inflate.unconsumed_tail:
            raise TrgcError(
                "E_LIMIT_INPUT_BYTES",
                f"the instances inflate to more than {cap:,} bytes",
                source=str(path),
            )
        if not inflate.eof:
            raise zlib.error("truncated gzip stream")
        data = inflate.unused_data
    return bytes(out)


def subsets_of(bench: Path) -> list[str]:
    if not bench.is_dir():
        raise TrgcError("E_IO", "not a JSONSchemaBench folder", source=str(bench))
    return sorted(p.name for p in bench.iterdir() if p.is_dir())


def run_schema(
    subset: str,
    path: Path,
    instances: list[tuple[bool, object]],
    *,
    separators: str,
    limits: Limits | None,
    open_objects: bool = False,
    ignore_keywords: tuple[str, ...] = (),
    unknown_keywords: str = "error",
    member_order: str = "declared",
    peer=None,
) -> SchemaResult:
    raw = read_file(path, "benchmark")
    texts = _instance_texts(raw, instances, separators)
    start = time.perf_counter()
    try:
        artifact = compile_schema(
            raw,
            separators=separators,
            open_objects=open_objects,
            limits=limits,
            ignore_keywords=ignore_keywords,
            unknown_keywords=unknown_keywords,
            member_order=member_order,
        )
    except TrgcError as error:
        elapsed = time.perf_counter() - start
        if error.code in KEYWORD_CODES and error.details.get("keyword"):
            result = SchemaResult(
                subset, path.name, "unsupported", str(error.details.get("keyword")), elapsed
            )
        else:
            result = SchemaResult(subset, path.name, error.code, None, elapsed)
        _run_peer(result, peer, raw, instances, texts)
        return result
    elapsed = time.perf_counter() - start
    result = SchemaResult(subset, path.name, "compiled", None, elapsed)
    result.annotations = tuple(artifact.metadata.get("options", {}).get("annotations", ()))
    va = vt = ir = it = 0
    for index, ((valid, _), (text, written)) in enumerate(zip(instances, texts, strict=True)):
        accepted = text is not None and check(artifact, text).accepted
        if valid:
            vt += 1
            va += accepted
            if accepted and written is not None and written != text:
                result.order_only += not check(artifact, written).accepted
        else:
            it += 1
            ir += not accepted
            if accepted:
                result.wrongly_accepted.append(index)
    result.valid, result.invalid = (va, vt), (ir, it)
    _run_peer(result, peer, raw, instances, texts)
    return result


# refusals that name the keyword they stop at
KEYWORD_CODES = frozenset({"E_UNSUPPORTED_KEYWORD", "E_UNIQUE_ITEMS", "E_SCHEMA_KEYWORD_TYPO"})


def _instance_texts(
    raw: bytes, instances: list[tuple[bool, object]], separators: str
) -> list[tuple[bytes | None, bytes | None]]:
    """Each instance canonically (members in declared order) and as written (its own order);
    none when the schema itself is no JSON (its compile error is the result)."""
    try:
        schema = json.loads(raw)
    except (ValueError, RecursionError):
        return [(None, None)] * len(instances)
    seps = (",", ":") if separators != "pretty" else (", ", ": ")
    out: list[tuple[bytes | None, bytes | None]] = []
    for _, data in instances:
        try:
            text = canonical_instance(schema, data, separators)
            written = json.dumps(data, ensure_ascii=False, separators=seps).encode("utf-8")
        except (RecursionError, ValueError):  # nests deeper than json.dumps can write
            text = written = None
        out.append((text, written))
    return out


def _run_peer(result: SchemaResult, peer, raw: bytes, instances, texts) -> None:
    """The same schema and canonical instance bytes through the peer."""
    if peer is None:
        return
    compiled = peer.compile(raw)
    result.peer_compiled = compiled.grammar is not None
    result.peer_error = compiled.error
    if compiled.grammar is None:
        return
    va = vt = ir = it = 0
    for (valid, _), (text, _written) in zip(instances, texts, strict=True):
        accepted = text is not None and peer.accepts(compiled, text)
        if valid:
            vt += 1
            va += accepted
        else:
            it += 1
            ir += not accepted
    result.peer_valid, result.peer_invalid = (va, vt), (ir, it)


def run_coverage(
    bench: Path,
    instances_dir: Path | None = None,
    *,
    subsets: list[str] | None = None,
    per_subset: int | None = None,
    separators: str = "compact",
    open_objects: bool = False,
    ignore_keywords: tuple[str, ...] = (),
    unknown_keywords: str = "error",
    member_order: str = "declared",
    limits: Limits | None = None,
    progress=None,
    peer=None,
) -> list[SchemaResult]:
    """Every schema of the chosen subsets (the first `per_subset` by name when given). An
    exception other than a `TrgcError` is a bug of trgc: it is recorded as that schema's
    outcome `E_INTERNAL` (with the exception in `internal`) and the run goes on."""
    results: list[SchemaResult] = []
    for subset in subsets or subsets_of(bench):
        files = sorted((bench / subset).glob("*.json"))[:per_subset]
        inst: dict[str, list[tuple[bool, object]]] = {}
        if instances_dir is not None and (instances_dir / f"{subset}.jsonl.gz").is_file():
            inst = read_instances(instances_dir / f"{subset}.jsonl.gz")
        for path in files:
            try:
                result = run_schema(
                    subset,
                    path,
                    inst.get(path.name, []),
                    separators=separators,
                    limits=limits,
                    open_objects=open_objects,
                    ignore_keywords=ignore_keywords,
                    unknown_keywords=unknown_keywords,
                    member_order=member_order,
                    peer=peer,
                )
            except Exception as error:  # noqa: BLE001 - a bug in one schema must not lose the run
                result = SchemaResult(subset, path.name, "E_INTERNAL", None, 0.0)
                result.internal = f"{type(error).__name__}: {error}"[:300]
            results.append(result)
            if progress is not None:
                progress()
    return results


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _peer_gaps(peered: list[SchemaResult]) -> dict:
    """Where the peer and trgc disagree: the schemas only one of them compiles or passes, each
    named `subset/file`, with trgc's reason (the refused keyword or the error code), and the
    count of trgc's reasons over the schemas only the peer compiles (the work still to do)."""

    def reason(r: SchemaResult) -> str:
        return r.keyword if r.outcome == "unsupported" and r.keyword else r.outcome

    only_peer = [r for r in peered if r.peer_compiled and r.outcome != "compiled"]
    by_reason: dict[str, int] = {}
    for r in only_peer:
        by_reason[reason(r)] = by_reason.get(reason(r), 0) + 1
    return {
        "only_peer_compiled": [
            {"file": f"{r.subset}/{r.file}", "trgc": reason(r)} for r in only_peer
        ],
        "only_peer_compiled_by_reason": dict(
            sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))
        ),
        "only_trgc_compiled": [
            f"{r.subset}/{r.file}"
            for r in peered
            if not r.peer_compiled and r.outcome == "compiled"
        ],
        "only_peer_passing": [
            {
                "file": f"{r.subset}/{r.file}",
                "trgc": "an instance misjudged" if r.outcome == "compiled" else reason(r),
            }
            for r in peered
            if r.peer_passes and not r.passes
        ],
    }


def report(results: list[SchemaResult]) -> dict:
    """Per-subset counts, keyword and code tallies, instance results and compile times."""
    subsets: dict[str, dict] = {}
    for r in results:
        s = subsets.setdefault(
            r.subset,
            {
                "schemas": 0,
                "compiled": 0,
                "unsupported": 0,
                "unsupported_by_keyword": {},
                "failed_by_code": {},
                "with_instances": 0,
                "passing": 0,
                "valid_accepted": 0,
                "valid_total": 0,
                "invalid_rejected": 0,
                "invalid_total": 0,
                "wrongly_accepted": [],
                "order_only_refusals": 0,
                "annotated": 0,
            },
        )
        s["schemas"] += 1
        if r.outcome == "compiled":
            s["compiled"] += 1
        elif r.outcome == "unsupported":
            s["unsupported"] += 1
            s["unsupported_by_keyword"][r.keyword] = (
                s["unsupported_by_keyword"].get(r.keyword, 0) + 1
            )
        else:
            s["failed_by_code"][r.outcome] = s["failed_by_code"].get(r.outcome, 0) + 1
        if r.outcome == "compiled" and r.has_instances:
            s["with_instances"] += 1
            s["passing"] += r.passes
            s["valid_accepted"] += r.valid[0]
            s["valid_total"] += r.valid[1]
            s["invalid_rejected"] += r.invalid[0]
            s["invalid_total"] += r.invalid[1]
            s["wrongly_accepted"].extend(f"{r.file}#{i}" for i in r.wrongly_accepted)
            s["order_only_refusals"] += r.order_only
        s["annotated"] += bool(r.annotations)
        if r.peer_compiled is not None:
            peer = s.setdefault(
                "peer",
                {"compiled": 0, "passing": 0, "wrongly_accepted": 0, "refused_by_message": {}},
            )
            peer["compiled"] += r.peer_compiled
            peer["passing"] += r.peer_passes
            peer["wrongly_accepted"] += r.peer_invalid[1] - r.peer_invalid[0]
            if not r.peer_compiled:
                head = (r.peer_error or "?").split(":")[0][:60]
                peer["refused_by_message"][head] = peer["refused_by_message"].get(head, 0) + 1
    for s in subsets.values():
        s["compiled_pct"] = round(100 * s["compiled"] / s["schemas"], 1) if s["schemas"] else 0.0
        s["unsupported_by_keyword"] = dict(
            sorted(s["unsupported_by_keyword"].items(), key=lambda kv: (-kv[1], kv[0]))
        )
        s["failed_by_code"] = dict(sorted(s["failed_by_code"].items()))
    times = [r.compile_seconds for r in results if r.outcome == "compiled"]
    for s in subsets.values():
        if "peer" in s:
            top = sorted(s["peer"]["refused_by_message"].items(), key=lambda kv: (-kv[1], kv[0]))
            s["peer"]["refused_by_message"] = dict(top[:10])
    total = {
        "schemas": len(results),
        "compiled": sum(r.outcome == "compiled" for r in results),
        "passing": sum(r.passes for r in results),
        "wrongly_accepted": sum(len(r.wrongly_accepted) for r in results),
        "order_only_refusals": sum(r.order_only for r in results),
        "annotated": sum(bool(r.annotations) for r in results),
        "internal_errors": [f"{r.subset}/{r.file}: {r.internal}" for r in results if r.internal],
        "compile_ms_median": round(1000 * _percentile(times, 0.5), 2),
        "compile_ms_p90": round(1000 * _percentile(times, 0.9), 2),
        "compile_ms_max": round(1000 * max(times, default=0.0), 2),
    }
    peered = [r for r in results if r.peer_compiled is not None]
    if peered:
        total["peer"] = {
            "compiled": sum(bool(r.peer_compiled) for r in peered),
            "passing": sum(r.peer_passes for r in peered),
            "wrongly_accepted": sum(r.peer_invalid[1] - r.peer_invalid[0] for r in peered),
            **_peer_gaps(peered),
        }
    return {"subsets": dict(sorted(subsets.items())), "total": total}
