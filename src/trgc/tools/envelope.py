"""tinyrust-tool-1 envelopes: validate a tool request, run the tool, build the records.

A request is data proposed by a model; only the compiled registry (trgc.tools.registry) is
authority. `run_request` checks, in this order and stopping at the first failure: size and
strict JSON; the exact field set at every level; field formats; name@version against the
registry; capability; schema hashes; authorization class against the tool's authority;
limits against the tool's ceilings; the input against its schema, then its canonical size. Then it
runs the tool under a deterministic operation budget and the request's wall-clock limit
(`trgc.tools.deadline`), and returns the result record and the
typed reinsertion record (role tool_result, trust untrusted_data), which trgc serialises and
escapes itself (`reinsertion_text`). See docs/tool-envelope.md.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from trgc.errors import TrgcError
from trgc.jsonread import read_json
from trgc.limits import DEFAULT_LIMITS
from trgc.tools import strictjson
from trgc.tools.deadline import Clock, Deadline, WallClockExceeded
from trgc.tools.outcome import Outcome
from trgc.tools.registry import OPERATIONS_PER_MS, REGISTRY, ToolDefinition, lookup
from trgc.tools.strictjson import BOOLEAN, INTEGER, NULLABLE_STRING, OBJECT, STRING, pointer

PROTOCOL = "tinyrust-tool-1"
MAX_REQUEST_DEPTH = 16
CODES = strictjson.Codes(
    json="E_ENVELOPE_JSON",
    unknown_field="E_ENVELOPE_UNKNOWN_FIELD",
    missing_field="E_ENVELOPE_MISSING_FIELD",
    type="E_ENVELOPE_TYPE",
)
REQUEST_SPEC: dict = {
    "protocol": STRING,
    "request_id": STRING,
    "composition": {"model_id": STRING, "tokenizer_id": STRING, "prompt_policy_id": STRING},
    "tool": {"name": STRING, "version": STRING, "capability": STRING},
    "schemas": {"input_sha256": STRING, "output_sha256": STRING},
    "authorization": {"class": STRING, "user_gesture_id": NULLABLE_STRING, "granted": BOOLEAN},
    "limits": {
        "input_bytes": INTEGER,
        "output_bytes": INTEGER,
        "operations": INTEGER,
        "timeout_ms": INTEGER,
    },
    "input": OBJECT,
}
# Authorization classes, weakest first: a tool whose authority is class k accepts requests of
# class k or stronger. automatic_read_only: no user involvement, no gesture id.
# user_gesture: a concrete user gesture (its id) granted this one request.
AUTHORIZATION_CLASSES = ("automatic_read_only", "user_gesture")

_REQUEST_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_GESTURE_ID_RE = _REQUEST_ID_RE
_ID_RE = re.compile(r"sha256:[0-9a-f]{64}")
_HEX_RE = re.compile(r"[0-9a-f]{64}")
_TRUNCATED_KEY = "truncated_json"


@dataclass(frozen=True)
class ToolRun:
    """A validated and executed request: its records and the serialised reinsertion text."""

    result: dict
    reinsertion: dict

    @property
    def reinsertion_text(self) -> str:
        return reinsertion_text(self.reinsertion)

    def to_dict(self) -> dict:
        return {
            "result": self.result,
            "reinsertion": self.reinsertion,
            "reinsertion_text": self.reinsertion_text,
        }


def _value_error(message: str, at: str) -> TrgcError:
    return TrgcError("E_ENVELOPE_VALUE", message, pointer=at)


def _match(regex: re.Pattern, value: str, at: str, what: str) -> None:
    if regex.fullmatch(value) is None:
        raise _value_error(f"{what} {value[:80]!r} is malformed", at)


def authorize(required: str, authorization: dict) -> None:
    """Raise `E_AUTH_DENIED` unless `authorization` satisfies a tool of authority `required`."""
    klass = authorization["class"]
    gesture = authorization["user_gesture_id"]
    if klass not in AUTHORIZATION_CLASSES:
        raise TrgcError(
            "E_AUTH_UNKNOWN_CLASS",
            f"unknown authorization class {klass[:80]!r}",
            pointer="/authorization/class",
            hint="classes: " + ", ".join(AUTHORIZATION_CLASSES),
        )
    if not authorization["granted"]:
        raise TrgcError(
            "E_AUTH_DENIED", "the request was not granted", pointer="/authorization/granted"
        )
    if AUTHORIZATION_CLASSES.index(klass) < AUTHORIZATION_CLASSES.index(required):
        raise TrgcError(
            "E_AUTH_DENIED",
            f"the tool requires authorization class {required!r}, the request has {klass!r}",
            pointer="/authorization/class",
        )
    if klass == "user_gesture":
        if gesture is None:
            raise TrgcError(
                "E_AUTH_DENIED",
                "class 'user_gesture' requires a user_gesture_id",
                pointer="/authorization/user_gesture_id",
            )
        _match(_GESTURE_ID_RE, gesture, "/authorization/user_gesture_id", "user_gesture_id")
    elif gesture is not None:
        raise _value_error(
            f"class {klass!r} carries no user gesture, got user_gesture_id {gesture[:80]!r}",
            "/authorization/user_gesture_id",
        )


def _check_limits(limits: dict, definition: ToolDefinition) -> None:
    ceilings = definition.ceilings
    bounds = {
        "input_bytes": (1, ceilings.input_bytes),
        "output_bytes": (ceilings.min_output_bytes, ceilings.output_bytes),
        "operations": (1, ceilings.operations),
        "timeout_ms": (1, ceilings.timeout_ms),
    }
    for name, (floor, ceiling) in bounds.items():
        value = limits[name]
        if not floor <= value <= ceiling:
            raise TrgcError(
                "E_ENVELOPE_LIMIT",
                f"limits.{name} = {value:,} is outside [{floor:,}, {ceiling:,}] for {definition.tool.value}",
                pointer=f"/limits/{name}",
            )


def _check_input(value: object, schema: dict, at: str) -> None:
    """Validate a tool input against its registry schema (closed objects of bounded strings)."""
    spec = {name: STRING for name in schema["properties"]}
    value = strictjson.check_object(value, spec, CODES, at)
    for name, rule in schema["properties"].items():
        text = value[name]
        if len(text) > rule["maxLength"]:
            raise _value_error(
                f"{name!r} has {len(text):,} characters, over the schema's maxLength of {rule['maxLength']:,}",
                at + pointer(name),
            )


def validate_request(request: dict) -> ToolDefinition:
    """Check a parsed request completely; return the registry definition it names."""
    strictjson.check_object(request, REQUEST_SPEC, CODES, "")
    if request["protocol"] != PROTOCOL:
        raise _value_error(
            f"protocol must be {PROTOCOL!r}, got {request['protocol'][:80]!r}", "/protocol"
        )
    _match(_REQUEST_ID_RE, request["request_id"], "/request_id", "request_id")
    for name in REQUEST_SPEC["composition"]:  # specification order, not document order
        _match(_ID_RE, request["composition"][name], f"/composition/{name}", name)
    for name in REQUEST_SPEC["schemas"]:
        _match(_HEX_RE, request["schemas"][name], f"/schemas/{name}", name)
    tool = request["tool"]
    definition = lookup(tool["name"], tool["version"])
    if definition is None:
        raise TrgcError(
            "E_TOOL_UNREGISTERED",
            f"no registered tool {tool['name'][:80]!r} version {tool['version'][:40]!r}",
            pointer="/tool",
            hint="registered: " + ", ".join(d.tool.value for d in REGISTRY.values()),
        )
    if tool["capability"] != definition.capability:
        raise TrgcError(
            "E_TOOL_CAPABILITY",
            f"{definition.tool.value} has capability {definition.capability!r}, the request says "
            f"{tool['capability'][:80]!r}",
            pointer="/tool/capability",
        )
    for name, expected in (
        ("input_sha256", definition.input_sha256),
        ("output_sha256", definition.output_sha256),
    ):
        if request["schemas"][name] != expected:
            raise TrgcError(
                "E_ENVELOPE_SCHEMA_MISMATCH",
                f"schemas.{name} does not match {definition.tool.value}",
                pointer=f"/schemas/{name}",
                hint=f"the registered schema hash is {expected}",
            )
    authorize(definition.authority, request["authorization"])
    _check_limits(request["limits"], definition)
    _check_input(request["input"], definition.input_schema, "/input")
    size = len(strictjson.canonical_bytes(request["input"]))
    if size > request["limits"]["input_bytes"]:
        raise TrgcError(
            "E_LIMIT_INPUT_BYTES",
            f"the input is {size:,} bytes as canonical JSON, over limits.input_bytes = "
            f"{request['limits']['input_bytes']:,}",
            pointer="/input",
        )
    return definition


def truncate_content(content: dict, output_bytes: int) -> tuple[dict, bool]:
    """`content` if its canonical JSON fits `output_bytes`, else `{"truncated_json": prefix}`.

    The prefix is the longest prefix (in Unicode scalars) of the canonical JSON text whose
    wrapped form still fits, so the record stays valid JSON and says it was truncated.
    """
    if len(strictjson.canonical_bytes(content)) <= output_bytes:
        return content, False
    text = strictjson.canonical_bytes(content).decode("utf-8")
    low, high = 0, len(text)
    while low < high:  # largest n with size(prefix n) <= output_bytes; size grows with n
        mid = (low + high + 1) // 2
        if len(strictjson.canonical_bytes({_TRUNCATED_KEY: text[:mid]})) <= output_bytes:
            low = mid
        else:
            high = mid - 1
    return {_TRUNCATED_KEY: text[:low]}, True


def reinsertion_text(record: dict) -> str:
    """The reinsertion record as trgc inserts it into a prompt: canonical JSON, ASCII only,
    with `<`, `>` and `&` escaped too, so no result text can spell markup or a chat-template
    delimiter, close the record, or start a line of its own."""
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _timed_out(timeout_ms: int, elapsed_ns: int) -> Outcome:
    message = (
        f"the tool ran {elapsed_ns // 1_000_000}.{elapsed_ns // 1000 % 1000:03d} ms of "
        f"wall-clock time, over limits.timeout_ms = {timeout_ms:,}; its result is discarded"
    )
    content = {"error": {"code": "E_TOOL_TIMEOUT", "message": message}}
    return Outcome("error", content, 0, "wall_clock_timeout", deterministic=False)


def run_tool(
    definition: ToolDefinition, data: dict, limits: dict, clock: Clock | None = None
) -> tuple[Outcome, int]:
    """Run the tool under both halves of `timeout_ms`: the deterministic operation budget
    `min(operations, timeout_ms × OPERATIONS_PER_MS)` and the wall clock. Returns the outcome
    and the operation budget."""
    budget = min(limits["operations"], limits["timeout_ms"] * OPERATIONS_PER_MS)
    deadline = Deadline(limits["timeout_ms"], clock)
    try:
        outcome = definition.run(data, budget, deadline.check)
        deadline.check()  # a result produced after the limit is not delivered
    except WallClockExceeded as stop:
        outcome = _timed_out(limits["timeout_ms"], stop.elapsed_ns)
    return outcome, budget


def execute(request: dict, definition: ToolDefinition, *, clock: Clock | None = None) -> ToolRun:
    """Run a validated request and build its result and reinsertion records; `clock`
    (monotonic nanoseconds) replaces the host's clock, for tests."""
    limits = request["limits"]
    outcome, budget = run_tool(definition, request["input"], limits, clock)
    full = strictjson.canonical_bytes(outcome.content)
    content, truncated = truncate_content(outcome.content, limits["output_bytes"])
    result_sha256 = strictjson.sha256_hex(full)
    result = {
        "protocol": PROTOCOL,
        "request_id": request["request_id"],
        "request_sha256": strictjson.sha256_hex(strictjson.canonical_bytes(request)),
        "composition": request["composition"],
        "tool": definition.tool.value,
        "capability": definition.capability,
        "status": outcome.status,
        "output_schema_sha256": definition.output_sha256,
        "result_sha256": result_sha256,
        "result_bytes": len(full),
        "truncated": truncated,
        "content": content,
        "provenance": {
            "implementation": definition.implementation,
            "implementation_hash": definition.implementation_hash,
            "deterministic": outcome.deterministic,
            "stop_reason": outcome.stop_reason,
            "operations": outcome.operations,
            "operation_budget": budget,
        },
    }
    reinsertion = {
        "role": "tool_result",
        "trust": "untrusted_data",
        "request_id": request["request_id"],
        "tool": definition.tool.value,
        "status": outcome.status,
        "schema_sha256": definition.output_sha256,
        "result_sha256": result_sha256,
        "truncated": truncated,
        "content": content,
    }
    return ToolRun(result, reinsertion)


def parse_request(data: bytes | str | dict, source: str | None = None) -> dict:
    """Strictly parse a request (a dict is re-read from its canonical JSON, same checks)."""
    if isinstance(data, dict):  # ASCII escapes keep lone surrogates for the input check
        data = json.dumps(data, sort_keys=True, separators=(",", ":")).encode("ascii")
    elif isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    parsed = read_json(
        data,
        code=CODES.json,
        what="the request",
        max_bytes=DEFAULT_LIMITS.input_bytes,
        max_depth=MAX_REQUEST_DEPTH,
        floats="reject",
        surrogate_code="E_ENVELOPE_VALUE",
        source=source,
    )
    if not isinstance(parsed, dict):
        raise TrgcError(
            "E_ENVELOPE_TYPE",
            f"a request is an object, got {strictjson.json_type(parsed)}",
            pointer="/",
            source=source,
        )
    return parsed


def run_request(
    data: bytes | str | dict, source: str | None = None, *, clock: Clock | None = None
) -> ToolRun:
    """Parse, validate and execute one tinyrust-tool-1 request."""
    request = parse_request(data, source)
    try:
        definition = validate_request(request)
    except TrgcError as error:
        error.source = error.source or source
        raise
    return execute(request, definition, clock=clock)


def request_template(tool: str) -> dict:
    """A valid request skeleton for a registered `name@version` (for docs and tests)."""
    definition = next((d for d in REGISTRY.values() if d.tool.value == tool), None)
    if definition is None:
        raise TrgcError("E_TOOL_UNREGISTERED", f"no registered tool {tool[:80]!r}")
    zero = "sha256:" + "0" * 64
    return {
        "protocol": PROTOCOL,
        "request_id": "example-1",
        "composition": {"model_id": zero, "tokenizer_id": zero, "prompt_policy_id": zero},
        "tool": {
            "name": definition.name,
            "version": definition.version,
            "capability": definition.capability,
        },
        "schemas": {
            "input_sha256": definition.input_sha256,
            "output_sha256": definition.output_sha256,
        },
        "authorization": {"class": definition.authority, "user_gesture_id": None, "granted": True},
        "limits": {
            "input_bytes": min(4096, definition.ceilings.input_bytes),
            "output_bytes": min(8192, definition.ceilings.output_bytes),
            "operations": definition.ceilings.operations,
            "timeout_ms": min(100, definition.ceilings.timeout_ms),
        },
        "input": {name: "" for name in definition.input_schema["properties"]},
    }
