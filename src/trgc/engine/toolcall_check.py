"""Binding a tool-call artifact to a tokenizer and checking where the constraint engages.

`check_toolcall` answers, for one artifact from `compile_toolcall` and one token table: is
every envelope marker a token (and is it a special or an added non-special token), is the
open marker allowed in free text, is EOS impossible once it is emitted, and, for each tool,
what the mask is at the arguments position: only tokens starting with `{`, no EOS, the merged
`{}` exactly when the tool has no required argument. The envelope up to the arguments is fed
the way a BPE tokenizer would split it: longest allowed token first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trgc.artifact.model import Artifact
from trgc.engine.matcher import Matcher
from trgc.errors import TrgcError
from trgc.grammar.toolcall import TOOLCALL_FORMAT, Tool, family

KIND_NORMAL, KIND_BYTE = 0, 1


@dataclass
class ToolcallReport:
    """What `check_toolcall` found; `ok` when `problems` is empty."""

    family: str
    artifact: str
    tokenizer: str
    markers: list[dict] = field(default_factory=list)
    start: dict = field(default_factory=dict)
    region: dict = field(default_factory=dict)
    tools: list[dict] = field(default_factory=list)
    problems: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "family": self.family,
            "artifact": self.artifact,
            "tokenizer": self.tokenizer,
            "markers": self.markers,
            "start": self.start,
            "region": self.region,
            "tools": self.tools,
            "problems": self.problems,
        }


def _options(artifact: Artifact) -> dict:
    options = (artifact.metadata or {}).get("options") or {}
    if options.get("format") != TOOLCALL_FORMAT:
        raise TrgcError(
            "E_USAGE",
            "the artifact was not compiled by `trgc toolcall` (no trgc-toolcall-1 options)",
        )
    return options


def _marker_ids(tokenizer, names: list[str]) -> list[dict]:
    out = []
    for name in names:
        if name in tokenizer.special_tokens:
            out.append({"name": name, "id": int(tokenizer.special_tokens[name]), "kind": "special"})
        elif name in tokenizer.added_tokens:
            out.append({"name": name, "id": int(tokenizer.added_tokens[name]), "kind": "added"})
        else:
            out.append({"name": name, "id": None, "kind": None})
    return out


class _Splitter:
    """Longest-allowed-token-first splitting of envelope text (what BPE merging tends to do)."""

    def __init__(self, tokenizer) -> None:
        self.by_bytes: dict[bytes, int] = {}
        for i in range(tokenizer.vocab_size):
            if tokenizer.kinds[i] in (KIND_NORMAL, KIND_BYTE):
                piece = tokenizer.token_bytes(i)
                if piece:
                    self.by_bytes.setdefault(piece, i)
        self.longest = max((len(p) for p in self.by_bytes), default=1)

    def feed(self, matcher: Matcher, data: bytes) -> int:
        """Advance through `data`; return the number of tokens used."""
        pos, used = 0, 0
        while pos < len(data):
            for size in range(min(self.longest, len(data) - pos), 0, -1):
                token = self.by_bytes.get(data[pos : pos + size])
                if token is not None and matcher.is_allowed(token):
                    matcher.advance(token)
                    pos, used = pos + size, used + 1
                    break
            else:
                raise TrgcError(
                    "E_TOKEN_NOT_ALLOWED",
                    f"no allowed token spells the envelope bytes {data[pos:]!r}",
                )
        return used


def _required(tool: Tool) -> bool:
    parameters = tool.parameters
    return isinstance(parameters, dict) and bool(parameters.get("required"))


def check_toolcall(
    artifact: Artifact, tokenizer, tools: tuple[Tool, ...] | None = None
) -> ToolcallReport:
    """Check a tool-call artifact against `tokenizer` (see the module docstring).

    `tools` (from `parse_tools`) adds the expectation that the merged `{}` is refused exactly
    for tools with required arguments. Problems are reported, not raised.
    """
    options = _options(artifact)
    fam = family(options["family"])
    report = ToolcallReport(fam.name, artifact.sha256, str(tokenizer.sha256))
    report.markers = _marker_ids(tokenizer, list(options["markers"]))
    for marker in report.markers:
        if marker["id"] is None:
            report.problems.append(
                {
                    "code": "E_SPECIAL_TOKEN_MISSING",
                    "message": f"the envelope marker {marker['name']!r} is not in the vocabulary",
                }
            )
    if report.problems:
        return report
    ids = {m["name"]: m["id"] for m in report.markers}
    eos = np.array(sorted(tokenizer.eos_ids), dtype=np.int64)
    matcher = Matcher(artifact, tokenizer)
    allowed = matcher.allowed_tokens()
    report.start = {
        "allowed": int(allowed.sum()),
        "open_marker_allowed": bool(allowed[ids[fam.open_marker]]),
        "eos_allowed": bool(allowed[eos].any()) if eos.size else False,
    }
    if not report.start["open_marker_allowed"]:
        report.problems.append(
            {"message": f"the open marker {fam.open_marker!r} is not allowed in free text"}
        )
    splitter = _Splitter(tokenizer)
    expected = {t.name: _required(t) for t in tools or ()}
    for name in options["tools"]:
        matcher.reset()
        used = 0
        for kind, value in fam.call_prefix(name):
            if kind == "special":
                matcher.advance(ids[value])
                used += 1
                if value == fam.open_marker and not report.region:
                    region = matcher.allowed_tokens()
                    report.region = {
                        "allowed": int(region.sum()),
                        "eos_allowed": bool(region[eos].any()) if eos.size else False,
                        "forced": matcher.forced_bytes().decode("utf-8", "replace"),
                    }
                    if report.region["eos_allowed"]:
                        report.problems.append(
                            {"message": "EOS is allowed right after the open marker"}
                        )
            else:
                used += splitter.feed(matcher, value.encode("utf-8"))
        allowed = matcher.allowed_tokens()
        firsts = sorted({tokenizer.token_bytes(int(i))[:1] for i in np.flatnonzero(allowed)})
        empty = splitter.by_bytes.get(b"{}")
        brace_quote = splitter.by_bytes.get(b'{"')
        entry = {
            "name": name,
            "prefix_tokens": used,
            "allowed": int(allowed.sum()),
            "eos_allowed": bool(allowed[eos].any()) if eos.size else False,
            "only_open_brace": firsts == [b"{"],
            "merged_empty_object_allowed": None if empty is None else bool(allowed[empty]),
            "merged_brace_quote_allowed": None
            if brace_quote is None
            else bool(allowed[brace_quote]),
        }
        report.tools.append(entry)
        if entry["eos_allowed"] or not entry["only_open_brace"]:
            report.problems.append(
                {"message": f"tool {name!r}: the arguments position admits more than an object"}
            )
        if (
            name in expected
            and empty is not None
            and entry["merged_empty_object_allowed"] == expected[name]
        ):
            state = "admits" if expected[name] else "refuses"
            report.problems.append(
                {"message": f"tool {name!r}: the merged {{}} token {state} the arguments object"}
            )
    return report
