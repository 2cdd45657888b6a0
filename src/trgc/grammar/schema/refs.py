"""Local `$ref` resolution: JSON pointers into the one schema document (RFC 6901, RFC 3986 fragments).

Only references inside the document are supported: `#`, `#/pointer`, or the root `$id` followed
by such a fragment. Anything else is `E_REMOTE_REF`; a plain-name fragment (`#foo`) needs
`$anchor` and is unsupported.
"""

from __future__ import annotations

from urllib.parse import unquote

from trgc.errors import TrgcError
from trgc.grammar.schema.normalize import escape_token


def root_base(root: object) -> str | None:
    """The root's `$id` (or draft-04 `id`) without fragment, if it has one."""
    if not isinstance(root, dict):
        return None
    base = root.get("$id", root.get("id"))
    if not isinstance(base, str) or not base:
        return None
    return base.split("#", 1)[0] or None


def resolve(ref: object, root: object, base: str | None, pointer: str) -> tuple[str, object]:
    """The canonical pointer of the referenced schema and the schema itself."""
    if not isinstance(ref, str):
        raise TrgcError(
            "E_SCHEMA_INVALID", f"$ref must be a string, got {type(ref).__name__}", pointer=pointer
        )
    head, hash_, fragment = ref.partition("#")
    if head and head != base:
        raise TrgcError(
            "E_REMOTE_REF",
            f"$ref {ref!r} points outside this document",
            pointer=pointer,
            hint="inline the referenced schema under $defs and use a local #/$defs/... reference",
        )
    fragment = unquote(fragment) if hash_ else ""
    if fragment and not fragment.startswith("/"):
        raise TrgcError(
            "E_UNSUPPORTED_KEYWORD",
            f"$ref {ref!r} names an anchor; references by anchor name are not supported",
            pointer=pointer,
            details={"keyword": "$anchor"},
        )
    target = root
    tokens: list[str] = []
    for raw in fragment.split("/")[1:] if fragment else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif (
            isinstance(target, list)
            and token.isdigit()
            and (token == "0" or not token.startswith("0"))
            and int(token) < len(target)
        ):
            target = target[int(token)]
        else:
            raise TrgcError(
                "E_REF_UNRESOLVED",
                f"$ref {ref!r} points to nothing in this document",
                pointer=pointer,
            )
        tokens.append(token)
    return "".join("/" + escape_token(t) for t in tokens), target
