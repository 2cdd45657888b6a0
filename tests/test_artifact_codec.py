"""The artifact codec: pinned bytes, round trip, functional equivalence, each corruption's code."""

from __future__ import annotations

import hashlib
import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from artifact_fixtures import brackets, counted, tiny
from trgc.artifact import codec
from trgc.artifact.check import check
from trgc.artifact.model import Artifact, Machine
from trgc.errors import TrgcError
from trgc.limits import DEFAULT_LIMITS

# The canonical bytes of `tiny()`, section by section (docs/artifact-format.md).
TINY_HEX = "".join(
    [
        "5452474102000000",  # magic "TRGA", format version 2
        "4d455441000000000d00000000000000",  # META, reserved, length 13
        "7b227374617274223a2273227d000000",  # {"start":"s"} + padding to 8
        "53504543000000000400000000000000",  # SPEC, length 4
        "0000000000000000",  # 0 specials + padding
        "42434c53000000000401000000000000",  # BCLS, length 260
        "01000000" + "00" * 256 + "00000000",  # 1 class, 256 class bytes, padding
        "4d414348000000002c00000000000000",  # MACH, length 44
        "010000000100000001000000",  # max_depth 1, 1 machine, 1 symbol
        "0100000073000000",  # name length 1, "s" + padding
        "00000000",  # kind 0 (rule)
        "0200000000000000",  # 2 states, 0 calls
        "00010000",  # accepting [0, 1] + padding
        "01000000ffffffff",  # next: [[1], [-1]]
        "00000000",  # padding to 8 (the section's)
        "4c494d54000000000400000000000000",  # LIMT, length 4
        "0000000000000000",  # 0 limits + padding
        "53524348000000002000000000000000",  # SRCH, length 32
        "00" * 32,  # no source hash
        "44475354000000002000000000000000",  # DGST, length 32
        "0b8718a33823493d79477d3c4e4c09d1fd0ef5422dd4c656385b8ca18b78c267",  # SHA-256 of all above
    ]
)
BRACKETS_SHA256 = "sha256:252a6ec084af218cd0f744e42014c11f122f6226225e70995ff791e5735d6b49"
# the MACH payload of artifact_fixtures.counted(): a rule machine calling a repeat machine
COUNTED_MACH_HEX = "".join(
    [
        "010000000200000002000000",  # max_depth 1, 2 machines, 2 symbols
        "0100000073000000",  # name "s"
        "00000000",  # kind 0 (rule)
        "0200000001000000",  # 2 states, 1 call
        "00010000",  # accepting [0, 1] + padding
        "fffffffffeffffffffffffffffffffff",  # next: [[-1, call 0], [-1, -1]]
        "01000000010000000200000003000000",  # call 0: machine 1, return to 1, bounds 2..3
        "03000000737b7d00",  # name "s{}" + padding
        "02000000",  # kind 2 (repeat)
        "0200000000000000",  # 2 states, 0 calls
        "00010000",  # accepting [0, 1] + padding
        "ffffffff01000000ffffffffffffffff",  # next: [[-1, 1], [-1, -1]]
    ]
)
COUNTED_SHA256 = "sha256:f1463cf772f2f72afbfbf61733906021f35f0be27ac60a40fe69d933897355b2"


def reseal(data: bytes) -> bytes:
    """Recompute the DGST section so that a deliberately inconsistent body passes the digest."""
    body = data[: -(codec.SECTION_HEADER_SIZE + codec.DIGEST_SIZE)]
    return data[: -codec.DIGEST_SIZE] + hashlib.sha256(body).digest()


def code_of(excinfo) -> str:
    return excinfo.value.code


# ------------------------------------------------------------------ 1. pinned bytes


def test_tiny_artifact_bytes_are_pinned():
    assert tiny().to_bytes().hex() == TINY_HEX


def test_counted_machine_bytes_are_pinned():
    data = counted().to_bytes()
    start = data.index(b"MACH") + codec.SECTION_HEADER_SIZE
    length = struct.unpack_from("<Q", data, start - 8)[0]
    assert data[start : start + length].hex() == COUNTED_MACH_HEX
    assert counted().sha256 == COUNTED_SHA256


def test_brackets_identity_is_pinned():
    art = brackets()
    assert art.sha256 == BRACKETS_SHA256
    assert art.sha256 == "sha256:" + hashlib.sha256(art.to_bytes()).hexdigest()


# ------------------------------------------------------------------ 2. round trip


@pytest.mark.parametrize("make", [tiny, brackets])
def test_round_trip_gives_identical_bytes(make, tmp_path):
    art = make()
    data = art.to_bytes()
    assert codec.encode(codec.decode(data)) == data
    path = tmp_path / "a.trga"
    assert art.save(path) == art.sha256
    loaded = codec.load_artifact(path)
    assert loaded.to_bytes() == data
    assert loaded.sha256 == art.sha256
    assert Artifact.from_bytes(path.read_bytes()).sha256 == art.sha256
    assert Artifact.from_bytes(data).sha256 == art.sha256


def test_identity_does_not_depend_on_compression():
    art = brackets()
    import zstandard

    other = zstandard.ZstdCompressor(
        level=1, write_checksum=True, write_content_size=True
    ).compress(art.to_bytes())
    assert other != codec.to_file_bytes(art)
    assert codec.from_file_bytes(other).sha256 == art.sha256


def test_different_content_gives_different_identity():
    assert brackets(max_depth=3).sha256 != brackets(max_depth=8).sha256


# ------------------------------------------------------------------ 3. functional equivalence


def test_decoded_artifact_behaves_identically():
    art = brackets(max_depth=4)
    back = codec.decode(art.to_bytes())
    assert back.metadata == art.metadata
    assert back.specials == art.specials and back.n_classes == art.n_classes and back.max_depth == 4
    assert np.array_equal(back.byte_class, art.byte_class)
    for m1, m2 in zip(art.machines, back.machines, strict=True):
        assert m1.name == m2.name
        assert np.array_equal(m1.accepting, m2.accepting)
        assert np.array_equal(m1.next, m2.next)
        assert np.array_equal(m1.calls, m2.calls)
        assert m2.next.dtype == np.int32 and m2.accepting.dtype == bool
    for data in [b"a", b"[a,[a]]", b"[[[a]]]", b"[[[[a]]]]", b"[a,", b"]", b""]:
        assert check(back, data) == check(art, data)
        assert check(back, data, prefix=True) == check(art, data, prefix=True)


# ------------------------------------------------------------------ 4. corruption


def test_flipped_byte_in_file_is_corrupt(tmp_path):
    blob = bytearray(codec.to_file_bytes(brackets()))
    blob[len(blob) // 2] ^= 0x40
    path = tmp_path / "flipped.trga"
    path.write_bytes(bytes(blob))
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path)
    assert code_of(excinfo) == "E_ARTIFACT_CORRUPT"
    assert excinfo.value.source == str(path)


@pytest.mark.parametrize("offset", [30, 100, 500, -40])
def test_flipped_byte_in_content_is_corrupt(offset):
    data = bytearray(brackets().to_bytes())
    data[offset] ^= 0x01
    with pytest.raises(TrgcError) as excinfo:
        codec.decode(bytes(data))
    assert code_of(excinfo) == "E_ARTIFACT_CORRUPT"


@pytest.mark.parametrize("keep", [3, 10, 40, -1])
def test_truncated_file(tmp_path, keep):
    blob = codec.to_file_bytes(brackets())
    path = tmp_path / "cut.trga"
    path.write_bytes(blob[:keep])
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path)
    assert code_of(excinfo) == ("E_NOT_AN_ARTIFACT" if keep == 3 else "E_ARTIFACT_TRUNCATED")


@pytest.mark.parametrize("keep", [2, 6, 8, 30, 300, -1, -48])
def test_truncated_content(keep):
    data = brackets().to_bytes()
    with pytest.raises(TrgcError) as excinfo:
        codec.decode(data[:keep])
    assert code_of(excinfo) == "E_ARTIFACT_TRUNCATED"


def test_wrong_magic(tmp_path):
    data = b"XRGA" + brackets().to_bytes()[4:]
    path = tmp_path / "magic.trga"
    path.write_bytes(codec.compress(data))
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path)
    assert code_of(excinfo) == "E_ARTIFACT_MAGIC"


def test_other_format_version(tmp_path):
    data = brackets().to_bytes()
    path = tmp_path / "v3.trga"
    path.write_bytes(codec.compress(data[:4] + struct.pack("<I", 3) + data[8:]))
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path)
    assert code_of(excinfo) == "E_ARTIFACT_VERSION"
    assert "version 3" in excinfo.value.message


def test_version_1_file_is_refused_with_a_hint(tmp_path):
    # a v1 file (repetitions copied) is never read: its version is refused before its tables
    data = brackets().to_bytes()
    path = tmp_path / "v1.trga"
    path.write_bytes(codec.compress(data[:4] + struct.pack("<I", 1) + data[8:]))
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path)
    assert code_of(excinfo) == "E_ARTIFACT_VERSION"
    assert "version 1 copied bounded repetitions" in excinfo.value.message
    assert "trgc compile" in excinfo.value.hint


@pytest.mark.parametrize("content", [b"", b"%trg 1\n", b'{"a": 1}', b"\x00" * 64])
def test_non_zstd_file(tmp_path, content):
    path = tmp_path / "plain.trga"
    path.write_bytes(content)
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path)
    assert code_of(excinfo) == "E_NOT_AN_ARTIFACT"


def test_trailing_bytes_after_frame(tmp_path):
    path = tmp_path / "extra.trga"
    path.write_bytes(codec.to_file_bytes(tiny()) + b"junk")
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path)
    assert code_of(excinfo) == "E_ARTIFACT_CORRUPT"


def test_missing_file_is_io_error(tmp_path):
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(tmp_path / "absent.trga")
    assert code_of(excinfo) == "E_IO"


def test_expected_identity(tmp_path):
    path = tmp_path / "a.trga"
    art = brackets()
    art.save(path)
    assert codec.load_artifact(path, expect=art.sha256).sha256 == art.sha256
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path, expect=tiny().sha256)
    assert code_of(excinfo) == "E_ARTIFACT_IDENTITY"


def test_content_size_is_limited_before_decompressing(tmp_path):
    path = tmp_path / "a.trga"
    brackets().save(path)
    limits = DEFAULT_LIMITS.with_overrides({"compiled_bytes": 100})
    with pytest.raises(TrgcError) as excinfo:
        codec.load_artifact(path, limits=limits)
    assert code_of(excinfo) == "E_LIMIT_COMPILED_BYTES"


def _patched(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1, old
    return reseal(data.replace(old, new))


@pytest.mark.parametrize(
    "old,new,what",
    [
        # value machine row 3: "]" -> 1 becomes "]" -> 9 (no such state)
        (
            struct.pack("<6i", -1, -1, 1, -1, 4, -1),
            struct.pack("<6i", -1, -1, 9, -1, 4, -1),
            "state",
        ),
        # start machine: <end> -> 2 becomes call edge 5 (no such call)
        (
            struct.pack("<6i", -1, -1, -1, -1, -1, 2),
            struct.pack("<6i", -1, -1, -1, -1, -1, -7),
            "call edge",
        ),
        # value's call edge (1, 3) becomes (7, 3): no machine 7
        (struct.pack("<2i", 1, 3), struct.pack("<2i", 7, 3), "machine"),
        # value's call edge (1, 3) becomes (1, 8): no state 8 in value
        (struct.pack("<2i", 1, 3), struct.pack("<2i", 1, 8), "state"),
        # metadata no longer canonical
        (b'"compiler":"trgc test"', b'"compiler": "trgc tst"', "canonical"),
        # limits section disagrees with metadata
        (
            b"states\x00\x00" + struct.pack("<Q", 65536),
            b"states\x00\x00" + struct.pack("<Q", 65535),
            "LIMT",
        ),
        # source hash disagrees with metadata
        (b"\xab" * 32, b"\xac" * 32, "SRCH"),
        # accepting flag that is not 0/1
        (
            struct.pack("<2I", 5, 1) + bytes([0, 1, 0]),
            struct.pack("<2I", 5, 1) + bytes([0, 2, 0]),
            "accepting",
        ),
    ],
)
def test_inconsistent_tables_are_corrupt(old, new, what):
    data = _patched(brackets().to_bytes(), old, new)
    with pytest.raises(TrgcError) as excinfo:
        codec.decode(data)
    assert code_of(excinfo) == "E_ARTIFACT_CORRUPT"
    assert what in excinfo.value.message


def test_byte_class_out_of_range_is_corrupt():
    data = tiny().to_bytes()
    start = data.index(b"BCLS") + codec.SECTION_HEADER_SIZE + 4
    bad = data[:start] + b"\x01" + data[start + 1 :]
    with pytest.raises(TrgcError) as excinfo:
        codec.decode(reseal(bad))
    assert code_of(excinfo) == "E_ARTIFACT_CORRUPT"


def test_encoding_an_invalid_artifact_is_internal_error():
    good = tiny()
    machine = good.machines[0]
    bad = Artifact(
        metadata={},
        byte_class=good.byte_class,
        n_classes=1,
        specials=(),
        machines=(
            Machine("s", machine.accepting, np.array([[5], [-1]], dtype=np.int32), machine.calls),
        ),
        max_depth=1,
    )
    with pytest.raises(TrgcError) as excinfo:
        bad.to_bytes()
    assert code_of(excinfo) == "E_INTERNAL"


def test_self_check_catches_a_decoder_that_changes_content(monkeypatch):
    """The self-check compares the re-encoded sections with the ones just written (it does not
    hash them again): a decoder that loses anything, here one accepting flag, is E_INTERNAL."""
    honest = codec._decode

    def lossy(data, limits, *, digest):
        artifact = honest(data, limits, digest=digest)
        first = artifact.machines[0]
        flipped = first.accepting.copy()
        flipped[-1] = not flipped[-1]
        changed = Machine(
            first.name, flipped, first.next, first.calls, first.kind, first.call_bounds
        )
        return Artifact(
            metadata=artifact.metadata, byte_class=artifact.byte_class,
            n_classes=artifact.n_classes, specials=artifact.specials,
            machines=(changed, *artifact.machines[1:]), max_depth=artifact.max_depth,
        )  # fmt: skip

    monkeypatch.setattr(codec, "_decode", lossy)
    with pytest.raises(TrgcError) as excinfo:
        tiny().to_bytes()
    assert code_of(excinfo) == "E_INTERNAL"
    assert "self-check" in str(excinfo.value)


# ------------------------------------------------------------------ atomic write


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "out.trga"

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(TrgcError) as excinfo:
        brackets().save(target)
    assert code_of(excinfo) == "E_IO"
    assert list(tmp_path.iterdir()) == []


def test_save_replaces_existing_file_whole(tmp_path):
    target = tmp_path / "out.trga"
    target.write_bytes(b"old content")
    tiny().save(target)
    assert codec.load_artifact(target).sha256 == tiny().sha256
    assert [p.name for p in tmp_path.iterdir()] == ["out.trga"]


def test_save_into_missing_directory_is_io_error(tmp_path):
    with pytest.raises(TrgcError) as excinfo:
        tiny().save(tmp_path / "no" / "such" / "dir" / "a.trga")
    assert code_of(excinfo) == "E_IO"


# ------------------------------------------------------------------ exhaustive and fuzzed damage

ARTIFACT_CODES = {
    "E_ARTIFACT_CORRUPT",
    "E_ARTIFACT_TRUNCATED",
    "E_ARTIFACT_MAGIC",
    "E_ARTIFACT_VERSION",
}


def test_every_proper_prefix_of_content_is_truncated():
    data = brackets().to_bytes()
    for keep in range(len(data)):
        with pytest.raises(TrgcError) as excinfo:
            codec.decode(data[:keep])
        assert code_of(excinfo) == "E_ARTIFACT_TRUNCATED", keep


def test_every_proper_prefix_of_file_is_truncated_or_not_an_artifact():
    blob = codec.to_file_bytes(brackets())
    for keep in range(len(blob)):
        with pytest.raises(TrgcError) as excinfo:
            codec.decompress(blob[:keep])
        assert code_of(excinfo) == ("E_NOT_AN_ARTIFACT" if keep < 4 else "E_ARTIFACT_TRUNCATED"), (
            keep
        )


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    edits=st.lists(
        st.tuples(st.integers(codec.HEADER_SIZE, 900), st.integers(0, 255)), min_size=1, max_size=3
    )
)
def test_resealed_damage_is_rejected_or_still_canonical(edits):
    """Even with a valid digest, damaged content either fails validation with an artifact code
    or decodes to an artifact whose canonical bytes are exactly the input (one encoding each)."""
    data = bytearray(brackets().to_bytes())
    for offset, value in edits:
        data[offset] = value
    data = reseal(bytes(data))
    try:
        art = codec.decode(data)
    except TrgcError as error:
        assert error.code in ARTIFACT_CODES
        return
    assert codec.encode(art) == data


def test_deeply_nested_metadata_is_corrupt_not_a_crash():
    data = tiny().to_bytes()
    meta = b"[" * 100_000 + b"]" * 100_000
    header = data[:8] + b"META" + struct.pack("<IQ", 0, len(meta))
    forged = header + meta + bytes(-len(meta) % 8) + data[data.index(b"SPEC") :]
    with pytest.raises(TrgcError) as excinfo:
        codec.decode(reseal(forged))
    assert code_of(excinfo) == "E_ARTIFACT_CORRUPT"
