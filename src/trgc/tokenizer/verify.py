"""Probes: check a token table against an independent tokenizer implementation.

The other implementation (the `tokenizers` library for Hugging Face files, `tiktoken` for rank
files, `sentencepiece` for `.model` files) reads the *original* source files and encodes each
probe document; concatenating our bytes for the ids it returns must give exactly the text it
encoded. That text is the probe document after the tokenizer's own normalisation (NFC for Qwen,
the `▁` dummy prefix for SentencePiece-style models), which the same library reports. Vocabulary
size, special-token ids and every token's bytes are compared too: tiktoken's and sentencepiece's
pieces directly, and for a Hugging Face file each id's vocabulary string as the `tokenizers`
library returns it (`id_to_token`), turned into bytes by the library's own machinery
(`library_byte_alphabet`, the library's decoder); see docs/token-table-format.md.
"""

from __future__ import annotations

import base64
import importlib.metadata
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trgc.errors import TrgcError
from trgc.tokenizer.load import Source, resolve_source
from trgc.tokenizer.sources import read_source
from trgc.tokenizer.table import KIND_BYTE, KIND_SPECIAL, KIND_UNUSED, TokenTable

_SHOW_IDS = 256  # ids listed per mismatching document
_MAX_TOKEN_PROBLEMS = 100  # per-id byte differences listed (all are counted)
_BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")


@dataclass
class Mismatch:
    """One probe document whose ids do not concatenate to its text under our table."""

    document: int
    first_diff: int  # byte offset of the first difference
    token_index: int  # index into ids of the token covering that offset
    token_id: int
    ours: str  # hex of our bytes for that token
    expected: str  # hex of the expected bytes at that position
    ids: list[int]
    text: str  # the probe document (shortened)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class VerifyReport:
    implementation: str
    documents: int = 0
    tokens: int = 0
    normalized_documents: int = 0  # documents the tokenizer's normaliser changes
    mismatches: list[Mismatch] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # vocab size, special ids, token bytes
    checked_token_bytes: int = 0
    # ids whose comparison used a byte the library never yields alone (see library_byte_alphabet)
    inferred_token_bytes: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.problems

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "implementation": self.implementation,
            "documents": self.documents,
            "tokens": self.tokens,
            "normalized_documents": self.normalized_documents,
            "checked_token_bytes": self.checked_token_bytes,
            "inferred_token_bytes": self.inferred_token_bytes,
            "mismatches": [m.to_dict() for m in self.mismatches],
            "problems": self.problems,
        }


PROBE_RESOURCE = "probe.txt"  # the default probe corpus, shipped inside trgc.tokenizer


def default_probe() -> tuple[str, str]:
    """The probe corpus shipped with trgc (ASCII, code, JSON, tool-call tags, CJK, emoji,
    combining marks, other scripts, whitespace runs) and where it was read from."""
    from importlib.resources import files

    resource = files("trgc.tokenizer").joinpath(PROBE_RESOURCE)
    return resource.read_text(encoding="utf-8"), str(resource)


def probe_documents(text: str) -> list[str]:
    """Every non-empty line of the probe corpus (leading spaces kept), then the whole corpus."""
    return [line for line in text.split("\n") if line.strip(" \t\r")] + [text]


def verify_table(
    path: str | Path,
    table: TokenTable,
    probe: str,
    *,
    specials: str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyReport:
    """Compare `table` with the independent implementation of the tokenizer at `path`."""
    src = resolve_source(Path(path))
    try:
        adapter = _ADAPTERS[src.format](src, table, Path(specials) if specials else None)
    except TrgcError:
        raise
    except Exception as exc:  # the reference library refused the file: say so, with its words
        raise TrgcError(
            "E_TOKENIZER_FORMAT",
            f"the reference implementation cannot read this tokenizer: {type(exc).__name__}: {exc}",
            source=str(src.path),
        ) from None
    report = VerifyReport(implementation=adapter.name)
    report.problems += _source_hash_problems(src, table)
    report.problems += adapter.structure_problems()
    report.checked_token_bytes = adapter.checked
    report.inferred_token_bytes = adapter.inferred
    docs = probe_documents(probe)
    for k, doc in enumerate(docs):
        ids = adapter.encode(doc)
        expected = adapter.expected(doc)
        report.documents += 1
        report.tokens += len(ids)
        report.normalized_documents += expected != doc.encode("utf-8")
        got = b"".join(table.token_bytes(i) if 0 <= i < table.vocab_size else b"\x00?" for i in ids)
        if got != expected:
            report.mismatches.append(_mismatch(k, doc, ids, got, expected, table))
        if progress is not None:
            progress(k + 1, len(docs))
    return report


def _source_hash_problems(src: Source, table: TokenTable) -> list[str]:
    """A table built from a file of the same name but other content is reported."""
    from trgc.tokenizer.sources import logical_name, sha256_hex

    name = logical_name(src.path)
    recorded = table.metadata.get("source_files", {}).get(name)
    actual = sha256_hex(read_source(src.path))
    if recorded is not None and recorded != actual:
        return [
            f"the table was built from a different {name} (sha256 {recorded[:12]}…, this one {actual[:12]}…)"
        ]
    return []


def _mismatch(
    k: int, doc: str, ids: list[int], got: bytes, expected: bytes, table: TokenTable
) -> Mismatch:
    diff = next(
        (i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
        min(len(got), len(expected)),
    )
    pos = 0
    for j, tok in enumerate(ids):
        piece = table.token_bytes(tok) if 0 <= tok < table.vocab_size else b""
        if pos + len(piece) > diff or j == len(ids) - 1:
            return Mismatch(
                k,
                diff,
                j,
                tok,
                piece.hex(),
                expected[pos : pos + max(len(piece), 1)].hex(),
                ids[:_SHOW_IDS],
                doc[:200],
            )
        pos += len(piece)
    return Mismatch(k, diff, -1, -1, "", expected[:8].hex(), [], doc[:200])


def _version(package: str) -> str:
    try:
        return f"{package} {importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return package


def _need(package: str):
    try:
        return __import__(package)
    except ImportError:
        raise TrgcError(
            "E_USAGE",
            f"verify needs the {package!r} package as the independent implementation",
            hint=f"pip install {package}",
        ) from None


class _Adapter(ABC):
    """An independent implementation that encodes probe text into token ids."""

    name = ""
    checked = 0
    inferred = 0

    def __init__(self, src: Source, table: TokenTable, specials: Path | None) -> None:
        self.src = src
        self.table = table

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """The ids the independent implementation gives `text`."""

    def expected(self, text: str) -> bytes:
        return text.encode("utf-8")

    def structure_problems(self) -> list[str]:
        return []

    def used_size(self) -> int:
        used = (self.table.kinds != KIND_UNUSED).nonzero()[0]
        return int(used[-1]) + 1 if used.size else 0

    def compare_specials(self, theirs: dict[str, int]) -> list[str]:
        out = []
        ours = self.table.special_tokens
        for name, i in sorted(theirs.items(), key=lambda kv: kv[1]):
            if ours.get(name) != i:
                out.append(f"special token {name!r}: library id {i}, table id {ours.get(name)}")
        out += [
            f"table special {name!r} ({i}) is not special in the library"
            for name, i in ours.items()
            if name not in theirs
        ]
        return out


class _HFAdapter(_Adapter):
    """`tokenizers` on the original tokenizer.json (or vocab.json + merges)."""

    def __init__(self, src: Source, table: TokenTable, specials: Path | None) -> None:
        super().__init__(src, table, specials)
        tokenizers = _need("tokenizers")
        self.name = _version("tokenizers")
        if src.format == "tokenizer.json":
            self.tok = tokenizers.Tokenizer.from_str(read_source(src.path).decode("utf-8"))
        else:
            self.tok = self._from_vocab_merges(tokenizers)
        self.sp_style = table.metadata.get("string_style") == "sentencepiece"
        self.prefix = _prefix_space(self.tok)

    def _from_vocab_merges(self, tokenizers):
        import json

        from trgc.tokenizer.vocab_merges import merges_file_for

        vocab = json.loads(read_source(self.src.path))
        lines = read_source(merges_file_for(self.src.path)).decode("utf-8").split("\n")
        merges = [
            tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")
        ]
        tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=merges))
        tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = tokenizers.decoders.ByteLevel()
        names = sorted(self.table.added_tokens.items(), key=lambda kv: kv[1])
        tok.add_special_tokens([n for n, i in names if self.table.kinds[i] == KIND_SPECIAL])
        tok.add_tokens(
            [
                tokenizers.AddedToken(n, normalized=False)
                for n, i in names
                if self.table.kinds[i] != KIND_SPECIAL
            ]
        )
        return tok

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def expected(self, text: str) -> bytes:
        norm = self.tok.normalizer.normalize_str(text) if self.tok.normalizer is not None else text
        if self.sp_style:
            norm = norm.replace("▁", " ")
        if self.prefix and norm and not norm.startswith(" "):
            norm = " " + norm
        return norm.encode("utf-8")

    def structure_problems(self) -> list[str]:
        out = []
        theirs = self.tok.get_vocab_size(with_added_tokens=True)
        if theirs != self.used_size():
            out.append(f"vocab size: library {theirs}, table {self.used_size()}")
        added = self.tok.get_added_tokens_decoder()
        special = {t.content: i for i, t in added.items() if t.special}
        out += self.compare_specials(special)
        for i, t in sorted(added.items()):
            if not t.special and self.table.added_tokens.get(t.content) != i:
                out.append(
                    f"added token {t.content!r}: library id {i}, table id {self.table.added_tokens.get(t.content)}"
                )
            elif not t.special and self.table.token_bytes(i) != t.content.encode("utf-8"):
                out.append(f"added token {t.content!r} ({i}): table bytes differ")
        return out + self.token_bytes_problems(set(added))

    def token_bytes_problems(self, added: set[int]) -> list[str]:
        """Every model id's bytes against what the library yields for it: its vocabulary
        string (`id_to_token`) mapped through the library's byte alphabet (byte-level), or
        decoded by the library's decoder behind a plain anchor piece (SentencePiece style;
        `<0xNN>` byte pieces are byte NN, the ByteFallback convention)."""
        import tokenizers

        if self.sp_style:
            alphabet, inferred_chars = {}, frozenset()
        else:
            alphabet, inferred_chars = library_byte_alphabet(tokenizers)
        unk = getattr(self.tok.model, "unk_token", None)
        out: list[str] = []
        count = 0
        n = min(self.tok.get_vocab_size(with_added_tokens=True), self.table.vocab_size)
        for i in range(n):
            if i in added:
                continue
            piece = self.tok.id_to_token(i)
            if piece is None:
                if self.table.kinds[i] != KIND_UNUSED:
                    out.append(
                        f"token {i}: no token in the library, {self.table.kinds[i]} in the table"
                    )
                continue
            self.checked += 1
            if piece == unk and self.sp_style:
                if self.table.special_tokens.get(piece) != i:
                    out.append(
                        f"token {i} ({piece!r}) is the library's unknown token; the table does not name it"
                    )
                continue
            if self.sp_style:
                expected = self._sp_piece_bytes(piece)
            else:
                expected = bytes(alphabet[c] for c in piece if c in alphabet)
                if len(expected) != len(piece):
                    expected = None
                self.inferred += bool(inferred_chars.intersection(piece))
            ours = self.table.token_bytes(i)
            if expected is None:
                out.append(
                    f"token {i} ({piece!r}): the library's string has characters outside its byte alphabet"
                )
            elif ours != expected:
                count += 1
                if count <= _MAX_TOKEN_PROBLEMS:
                    out.append(
                        f"token {i} ({piece!r}): library bytes {expected.hex()}, table {ours.hex()}"
                    )
        if count > _MAX_TOKEN_PROBLEMS:
            out.append(f"... {count - _MAX_TOKEN_PROBLEMS} more ids whose bytes differ")
        return out

    def _sp_piece_bytes(self, piece: str) -> bytes | None:
        match = _BYTE_PIECE.fullmatch(piece)
        if match:
            return bytes([int(match.group(1), 16)])
        decoder = self.tok.decoder
        if decoder is None:
            return None
        text = decoder.decode(["A", piece])  # behind an anchor no decoder strips or merges
        return text[1:].encode("utf-8") if text.startswith("A") else None


def library_byte_alphabet(tokenizers) -> tuple[dict[str, int], frozenset[str]]:
    """The byte-level alphabet (character -> byte) as the `tokenizers` library maps it.

    The library's ByteLevel pre-tokenizer turns each UTF-8 byte of a text into one character;
    fed one text holding every byte that can occur in UTF-8 (all of 00-7F, 80-BF and C2-F4),
    it shows 243 of the 256 pairs. The other 13 bytes (C0, C1, F5-FF) never occur in UTF-8 text,
    so no library call yields them; the 13 characters of `ByteLevel.alphabet()` that remain are
    paired with them in ascending order (GPT-2's construction). Returns the mapping and the set
    of those 13 inferred characters."""
    pre = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    leads3 = [0x800, *(lead << 12 for lead in range(1, 16) if lead != 0xD), 0xD000]
    points = [*range(0x800), *leads3, 0x10000, 0x40000, 0x80000, 0xC0000, 0x100000]
    text = "".join(map(chr, points))
    mapped = "".join(piece for piece, _ in pre.pre_tokenize_str(text))
    alphabet: dict[str, int] = {}
    for byte, char in zip(text.encode("utf-8"), mapped, strict=True):
        alphabet.setdefault(char, byte)
    rest_chars = sorted(set(tokenizers.pre_tokenizers.ByteLevel.alphabet()) - set(alphabet))
    rest_bytes = sorted(set(range(256)) - set(alphabet.values()))
    if len(alphabet) != 243 or len(rest_chars) != len(rest_bytes):
        raise TrgcError(
            "E_INTERNAL",
            f"the tokenizers library's byte alphabet has {len(alphabet)} observable pairs",
        )
    alphabet.update(zip(rest_chars, rest_bytes, strict=True))
    return alphabet, frozenset(rest_chars)


def _prefix_space(tok) -> bool:
    """Whether the pre-tokenizer adds a leading space (ByteLevel add_prefix_space, Metaspace prepend)."""
    import json

    from trgc.tokenizer.hf_json import pipeline_types

    doc = json.loads(tok.to_str())
    for kind, comp in pipeline_types(doc.get("pre_tokenizer")):
        if kind == "ByteLevel" and comp.get("add_prefix_space"):
            return True
        if kind == "Metaspace" and (
            comp.get("prepend_scheme") in ("always", "first") or comp.get("add_prefix_space")
        ):
            return True
    return False


class _TiktokenAdapter(_Adapter):
    """`tiktoken.Encoding` built from the rank file and sidecar, read the way tiktoken reads them."""

    def __init__(self, src: Source, table: TokenTable, specials: Path | None) -> None:
        super().__init__(src, table, specials)
        import json

        from trgc.tokenizer.sources import logical_name
        from trgc.tokenizer.tiktoken_format import find_sidecar

        tiktoken = _need("tiktoken")
        self.name = _version("tiktoken")
        ranks = {}
        for line in read_source(src.path).splitlines():  # tiktoken.load.load_tiktoken_bpe's reading
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        sidecar = json.loads(read_source(find_sidecar(src.path, specials)))
        entry = (
            sidecar
            if "special_tokens" in sidecar
            else sidecar[logical_name(src.path).removesuffix(".tiktoken")]
        )
        self.ranks = ranks
        self.specials = dict(entry["special_tokens"])
        self.enc = tiktoken.Encoding(
            src.path.name,
            pat_str=entry["pat_str"],
            mergeable_ranks=ranks,
            special_tokens=self.specials,
        )

    def encode(self, text: str) -> list[int]:
        return self.enc.encode(text, disallowed_special=())

    def structure_problems(self) -> list[str]:
        out = []
        if self.enc.n_vocab != self.used_size():
            out.append(f"vocab size: tiktoken {self.enc.n_vocab}, table {self.used_size()}")
        for piece, rank in self.ranks.items():
            if self.table.token_bytes(rank) != piece:
                out.append(
                    f"token {rank}: rank file bytes {piece.hex()}, table {self.table.token_bytes(rank).hex()}"
                )
        self.checked = len(self.ranks)
        return out[:100] + self.compare_specials(self.specials)


class _SentencePieceAdapter(_Adapter):
    """`sentencepiece` on the original `.model` bytes."""

    def __init__(self, src: Source, table: TokenTable, specials: Path | None) -> None:
        super().__init__(src, table, specials)
        spm = _need("sentencepiece")
        self.name = _version("sentencepiece")
        self.sp = spm.SentencePieceProcessor(model_proto=read_source(src.path))

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text)

    def expected(self, text: str) -> bytes:
        return self.sp.normalize(text).replace("▁", " ").encode("utf-8")

    def structure_problems(self) -> list[str]:
        out = []
        n = self.sp.get_piece_size()
        if n != self.table.vocab_size:
            out.append(f"vocab size: sentencepiece {n}, table {self.table.vocab_size}")
        special = {}
        for i in range(min(n, self.table.vocab_size)):
            piece = self.sp.id_to_piece(i)
            if self.sp.is_control(i) or self.sp.is_unknown(i):
                special[piece] = i
            elif self.sp.is_byte(i):
                if self.table.kinds[i] != KIND_BYTE or self.table.token_bytes(i) != bytes(
                    [int(piece[3:5], 16)]
                ):
                    out.append(f"byte piece {piece} ({i}) differs in the table")
            elif not self.sp.is_unused(i) and self.table.token_bytes(i) != piece.replace(
                "▁", " "
            ).encode("utf-8"):
                out.append(f"piece {piece!r} ({i}): table bytes {self.table.token_bytes(i).hex()}")
        self.checked = n
        return out[:100] + self.compare_specials(special)


_ADAPTERS: dict[str, type[_Adapter]] = {
    "tokenizer.json": _HFAdapter,
    "vocab-merges": _HFAdapter,
    "tiktoken": _TiktokenAdapter,
    "sentencepiece": _SentencePieceAdapter,
}
