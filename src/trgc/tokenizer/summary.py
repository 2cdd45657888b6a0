"""A machine-readable description of a token table (what `trgc tokenizer inspect` shows)."""

from __future__ import annotations

from trgc.tokenizer.table import KIND_NORMAL, TokenTable


def describe(table: TokenTable, *, with_trie: bool = True) -> dict:
    """Identity, counts by kind, specials, EOS ids, added tokens, reports, trie statistics."""
    names = {i: n for n, i in table.special_tokens.items()}
    names.update({i: n for n, i in table.added_tokens.items()})
    meta = {k: v for k, v in table.metadata.items() if k != "reports"}
    out = {
        "sha256": table.sha256,
        "vocab_size": table.vocab_size,
        "counts": table.counts(),
        "token_bytes_total": int(table.offsets[-1]),
        "max_token_bytes": int(table.lengths.max()) if table.vocab_size else 0,
        "special_tokens": table.special_tokens,
        "added_not_special": {
            n: i for n, i in table.added_tokens.items() if table.kinds[i] == KIND_NORMAL
        },
        "eos": [
            {"id": i, "name": names.get(i), "bytes": table.token_bytes(i).hex()}
            for i in table.eos_ids
        ],
        "metadata": meta,
        "reports": table.metadata.get("reports", {}),
    }
    if with_trie:
        out["trie"] = table.trie.stats()
    return out


def show_token(table: TokenTable, i: int) -> dict:
    """One token: kind, bytes (hex and, when valid UTF-8, text), and its name if it has one."""
    data = table.token_bytes(i)
    names = [n for n, j in table.special_tokens.items() if j == i] + [
        n for n, j in table.added_tokens.items() if j == i
    ]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {
        "id": i,
        "kind": table.kind_name(i),
        "hex": data.hex(),
        "text": text,
        "name": names[0] if names else None,
    }
