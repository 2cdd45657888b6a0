"""The persistent mask cache (`trgc.engine.diskcache`): keys, the entry format, refusal of
every kind of bad file, LRU eviction within the byte bound, maintenance, and several real
processes reading and writing one directory at once."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from trgc.engine import diskcache
from trgc.engine.diskcache import (
    DiskCache,
    EntryKey,
    decode_entry,
    default_max_bytes,
    default_root,
    encode_entry,
    open_cache,
    trm_key,
)
from trgc.errors import TrgcError

ROOT = Path(__file__).resolve().parents[1]
KEY = EntryKey("frame", 1, "sha256:" + "a" * 64, "0.1.0", "trgc-specials-1", "sha256:" + "b" * 64)


def key_n(n: int, kind: str = "frame") -> EntryKey:
    return replace(KEY, kind=kind, subject=f"sha256:{n:064x}")


def payload_n(n: int, size: int = 1000) -> bytes:
    seed = hashlib.sha256(str(n).encode()).digest()
    return (seed * (size // 32 + 1))[:size]


def files_of(cache: DiskCache) -> list[Path]:
    return sorted(cache.layout.rglob("*.entry"))


# -- keys and the entry format -----------------------------------------------------------------


def test_key_address_is_sha256_of_canonical_json():
    canonical = KEY.canonical()
    assert canonical == (
        b'{"compiler":"0.1.0","format":1,"kind":"frame","policy":"trgc-specials-1",'
        b'"subject":"sha256:' + b"b" * 64 + b'","tokenizer":"sha256:' + b"a" * 64 + b'"}'
    )
    assert KEY.address() == hashlib.sha256(canonical).hexdigest()


def test_every_key_field_changes_the_address():
    changed = [
        replace(KEY, kind="trm"),
        replace(KEY, format=2),
        replace(KEY, tokenizer="sha256:" + "c" * 64),
        replace(KEY, compiler="0.1.1"),
        replace(KEY, policy="trgc-specials-2"),
        replace(KEY, subject="sha256:" + "d" * 64),
    ]
    addresses = {k.address() for k in changed} | {KEY.address()}
    assert len(addresses) == len(changed) + 1


@pytest.mark.parametrize(
    "fields",
    [{"kind": "Frame"}, {"kind": ""}, {"kind": "a/b"}, {"format": -1}, {"format": True},
     {"subject": 3}, {"subject": "x" * 5000}],
)  # fmt: skip
def test_bad_keys_are_refused(fields):
    with pytest.raises(ValueError):
        replace(KEY, **fields)


def test_entry_bytes_are_pinned():
    data = encode_entry(KEY, b"payload")
    canonical = KEY.canonical()
    head = b"TRGCDCE\0" + struct.pack("<IIQ", 1, len(canonical), 7)
    assert data[: len(head)] == head
    assert data[len(head) : len(head) + len(canonical)] == canonical
    assert data[len(head) + len(canonical) : -32] == b"payload"
    assert data[-32:] == hashlib.sha256(data[:-32]).digest()
    assert decode_entry(data, KEY, Path("x")) == (canonical, b"payload")


def test_trm_key_names_artifact_and_trie():
    key = trm_key(("sha256:art", "sha256:tok", "0.1.0", "pol", "sha256:trie"), 1)
    assert (key.kind, key.format, key.tokenizer, key.subject) == (
        "trm", 1, "sha256:tok", "sha256:art sha256:trie"
    )  # fmt: skip


# -- reading and writing -----------------------------------------------------------------------


def test_put_then_get_in_another_object(tmp_path):
    writer = DiskCache(tmp_path / "c")
    assert writer.get(KEY) is None and writer.stats.misses == 1
    assert writer.put(KEY, b"mask bytes")
    reader = DiskCache(tmp_path / "c")
    assert reader.get(KEY) == b"mask bytes"
    assert reader.stats.hits == 1 and reader.stats.refused == {}
    assert reader.get(replace(KEY, format=2)) is None
    assert (
        (tmp_path / "c" / "CACHEDIR.TAG")
        .read_text()
        .startswith("Signature: 8a477f597d28d172789f06886806bc55")
    )
    assert [p.name for p in files_of(reader)] == [KEY.address() + ".entry"]


def test_replace_publishes_over_an_entry_and_keeps_the_ledger_exact(tmp_path):
    """`put` keeps the entry already there; `put(replace=True)` (a growing mask store) puts
    the new one in its place, in the foreground and from the publisher, and the ledger counts
    the file once at its new size."""
    cache = DiskCache(tmp_path)
    assert cache.put(KEY, payload_n(1, 500))
    assert cache.put(KEY, payload_n(2, 900)) and cache.get(KEY) == payload_n(1, 500)
    assert cache.put(KEY, payload_n(2, 900), replace=True)
    assert DiskCache(tmp_path).get(KEY) == payload_n(2, 900)
    cache.put_later(KEY, lambda: payload_n(3, 300), replace=True)
    assert cache.flush(30)
    assert DiskCache(tmp_path).get(KEY) == payload_n(3, 300)
    assert cache._read_ledger() == sum(p.stat().st_size for p in files_of(cache))
    assert len(files_of(cache)) == 1 and cache.info().temporaries == 0


def test_no_temporary_is_left_behind(tmp_path):
    cache = DiskCache(tmp_path)
    for n in range(20):
        cache.put(key_n(n), payload_n(n))
    assert cache.info().temporaries == 0
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_oversized_payload_is_not_written(tmp_path):
    cache = DiskCache(tmp_path, max_entry_bytes=100)
    assert not cache.put(KEY, b"x" * 101)
    assert cache.stats.write_failures == 1 and files_of(cache) == []
    assert cache.put(KEY, b"x" * 100)


def test_unwritable_location_is_a_failed_put_not_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"not a directory")
    cache = DiskCache(blocker)
    assert cache.put(KEY, b"x") is False
    assert cache.get(KEY) is None
    assert cache.stats.write_failures == 1
    with pytest.raises(TrgcError) as info:
        cache.info()
    assert info.value.code == "E_IO"


# -- refusals: each bad file has its own code, is counted, removed and a miss ---------------------


def _plant(cache: DiskCache, key: EntryKey, data: bytes) -> Path:
    path = cache.path_of(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _reencode(data: bytearray) -> bytes:
    body = bytes(data[:-32])
    return body + hashlib.sha256(body).digest()


def _version_2(good: bytes) -> bytes:
    data = bytearray(good)
    data[8:12] = struct.pack("<I", 2)
    return _reencode(data)


def _flip(good: bytes, at: int) -> bytes:
    data = bytearray(good)
    data[at] ^= 0x01
    return bytes(data)


GOOD = encode_entry(KEY, b"0123456789" * 10)
BAD_FILES = {
    "empty": (b"", "E_CACHE_ENTRY_TRUNCATED"),
    "magic only": (GOOD[:8], "E_CACHE_ENTRY_TRUNCATED"),
    "half header": (GOOD[:15], "E_CACHE_ENTRY_TRUNCATED"),
    "cut in the payload": (GOOD[:-50], "E_CACHE_ENTRY_TRUNCATED"),
    "digest missing a byte": (GOOD[:-1], "E_CACHE_ENTRY_TRUNCATED"),
    "a payload bit flipped": (_flip(GOOD, len(GOOD) - 40), "E_CACHE_ENTRY_CORRUPT"),
    "a key bit flipped": (_flip(GOOD, 30), "E_CACHE_ENTRY_CORRUPT"),
    "a digest bit flipped": (_flip(GOOD, len(GOOD) - 1), "E_CACHE_ENTRY_CORRUPT"),
    "trailing bytes": (GOOD + b"\0", "E_CACHE_ENTRY_CORRUPT"),
    "wrong magic": (b"TRGCTRM\0" + GOOD[8:], "E_CACHE_ENTRY_FOREIGN"),
    "a zstd frame": (bytes.fromhex("28b52ffd") + GOOD[4:], "E_CACHE_ENTRY_FOREIGN"),
    "container version 2": (_version_2(GOOD), "E_CACHE_ENTRY_FOREIGN"),
    "another key's entry": (encode_entry(replace(KEY, compiler="9"), b"x"), "E_CACHE_ENTRY_FOREIGN"),
    "another format's entry": (encode_entry(replace(KEY, format=2), b"x"), "E_CACHE_ENTRY_FOREIGN"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_entry_is_refused_counted_removed_and_recomputed(tmp_path, name):
    data, code = BAD_FILES[name]
    cache = DiskCache(tmp_path)
    path = _plant(cache, KEY, data)
    assert cache.get(KEY) is None
    assert cache.stats.refused == {code: 1}
    assert cache.stats.last_refusal.code == code
    assert cache.stats.misses == 1 and cache.stats.hits == 0
    assert not path.exists()
    assert cache.put(KEY, b"recomputed")
    assert cache.get(KEY) == b"recomputed"


def test_oversized_entry_is_refused_before_it_is_read(tmp_path):
    big = DiskCache(tmp_path)
    assert big.put(KEY, b"y" * 5000)
    small = DiskCache(tmp_path, max_entry_bytes=1000)
    path = small.path_of(KEY)
    with open(path, "r+b") as handle:  # a sparse 4 GiB tail: reading it would be noticed
        handle.truncate(4 << 30)
    assert small.get(KEY) is None
    assert small.stats.refused == {"E_CACHE_ENTRY_OVERSIZED": 1}
    assert not path.exists()


def test_decode_error_messages_name_the_file(tmp_path):
    with pytest.raises(TrgcError) as info:
        decode_entry(GOOD[:-1], KEY, tmp_path / "f.entry")
    assert info.value.source == str(tmp_path / "f.entry") and info.value.hint


# -- the byte bound and LRU eviction ----------------------------------------------------------


def test_total_stays_within_the_bound(tmp_path):
    size = len(encode_entry(key_n(0), payload_n(0)))
    cache = DiskCache(tmp_path, max_bytes=10 * size)
    for n in range(60):
        assert cache.put(key_n(n), payload_n(n))
        assert cache.info().bytes <= 10 * size
    assert cache.stats.evictions >= 50


def test_least_recently_used_goes_first(tmp_path):
    size = len(encode_entry(key_n(0), payload_n(0)))
    cache = DiskCache(tmp_path, max_bytes=10 * size)
    now = time.time()
    for n in range(10):
        cache.put(key_n(n), payload_n(n))
        os.utime(cache.path_of(key_n(n)), (now - 1000 + n, now - 1000 + n))  # 0 is the oldest
    assert cache.get(key_n(0)) == payload_n(0)  # used now: the most recent
    assert cache.get(key_n(1)) == payload_n(1)
    cache.put(key_n(10), payload_n(10))  # over the bound: evict down to LOW_WATER
    present = [n for n in range(11) if cache.path_of(key_n(n)).exists()]
    assert present == [0, 1, 5, 6, 7, 8, 9, 10]
    assert cache.info().bytes <= diskcache.LOW_WATER * 10 * size


def test_missing_or_garbled_ledger_is_recounted(tmp_path):
    size = len(encode_entry(key_n(0), payload_n(0)))
    cache = DiskCache(tmp_path, max_bytes=5 * size)
    for n in range(5):
        cache.put(key_n(n), payload_n(n))
    ledger = cache.layout / "usage.json"
    assert json.loads(ledger.read_bytes()) == {"bytes": 5 * size}
    ledger.write_bytes(b"{garbled")
    cache.put(key_n(5), payload_n(5))  # the recount sees 6 entries: over the bound
    assert cache.info().bytes <= 5 * size
    assert json.loads(ledger.read_bytes()) == {"bytes": cache.info().bytes}


# -- maintenance ------------------------------------------------------------------------------


def test_info_counts_per_kind(tmp_path):
    cache = DiskCache(tmp_path, max_bytes=12345)
    cache.put(key_n(1), b"a" * 10)
    cache.put(key_n(2), b"b" * 20)
    cache.put(key_n(3, "trm"), b"c" * 30)
    info = cache.info()
    overhead = diskcache.entry_overhead(key_n(1))
    assert info.entries == 3 and info.limit_bytes == 12345
    assert info.kinds == {
        "frame": {"entries": 2, "bytes": 30 + 2 * overhead},
        "trm": {"entries": 1, "bytes": 30 + diskcache.entry_overhead(key_n(3, "trm"))},
    }
    assert info.bytes == sum(k["bytes"] for k in info.kinds.values())


def test_prune_evicts_verifies_and_removes_stale_temporaries(tmp_path):
    cache = DiskCache(tmp_path)
    for n in range(6):
        cache.put(key_n(n), payload_n(n))
    corrupt = cache.path_of(key_n(0))
    corrupt.write_bytes(_flip(corrupt.read_bytes(), 100))
    cache.path_of(key_n(1)).write_bytes(cache.path_of(key_n(1)).read_bytes()[:-3])
    cache.path_of(key_n(2)).write_bytes(cache.path_of(key_n(3)).read_bytes())  # misplaced
    stale = cache.path_of(key_n(4)).parent / ".x.entry.abc.tmp"
    stale.write_bytes(b"half")
    os.utime(stale, (time.time() - 7200,) * 2)
    fresh = cache.path_of(key_n(5)).parent / ".y.entry.def.tmp"
    fresh.write_bytes(b"being written")
    assert cache.info().temporaries == 2
    report = cache.prune(verify=True)
    assert report.refused == {
        "E_CACHE_ENTRY_CORRUPT": 1,
        "E_CACHE_ENTRY_FOREIGN": 1,
        "E_CACHE_ENTRY_TRUNCATED": 1,
    }
    assert report.temporaries_removed == 1 and fresh.exists() and not stale.exists()
    assert report.entries == 3 and report.evicted_entries == 0
    empty = cache.prune(0)
    assert empty.evicted_entries == 3 and empty.entries == 0 and empty.bytes == 0
    with pytest.raises(TrgcError) as info:
        cache.prune(-1)
    assert info.value.code == "E_USAGE"


def test_clear_removes_everything(tmp_path):
    cache = DiskCache(tmp_path)
    for n in range(4):
        cache.put(key_n(n), payload_n(n, 100))
    entries, removed = cache.clear()
    assert entries == 4 and removed == 4 * len(encode_entry(key_n(0), payload_n(0, 100)))
    assert cache.info().entries == 0 and not cache.layout.exists()
    assert cache.put(KEY, b"again") and cache.get(KEY) == b"again"


# -- location and bound from the environment ---------------------------------------------------


def test_location_from_env_then_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("TRGC_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_root() == tmp_path / "explicit"
    assert open_cache().root == tmp_path / "explicit"
    assert open_cache(tmp_path / "opt").root == tmp_path / "opt"
    assert open_cache(enabled=False) is None
    monkeypatch.delenv("TRGC_CACHE_DIR")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert default_root() == tmp_path / "xdg" / "trgc"


def test_bound_from_env(monkeypatch):
    monkeypatch.delenv("TRGC_CACHE_MAX_BYTES", raising=False)
    assert default_max_bytes() == diskcache.DEFAULT_MAX_BYTES
    monkeypatch.setenv("TRGC_CACHE_MAX_BYTES", "1_000")
    assert default_max_bytes() == 1000 and DiskCache("/nonexistent").max_bytes == 1000
    monkeypatch.setenv("TRGC_CACHE_MAX_BYTES", "lots")
    with pytest.raises(TrgcError) as info:
        default_max_bytes()
    assert info.value.code == "E_USAGE"


# -- a whole .trm file as an opaque blob ----------------------------------------------------------


def test_trm_file_round_trips_through_the_cache(tmp_path):
    import trgc
    from trgc.engine import trm
    from trgc.engine.binding import bind
    from trgc.engine.precompute import precompute

    table = trgc.load_tokenizer(ROOT / "tokenizers" / "synthetic" / "json-bytelevel")
    art = trgc.compile_grammar((ROOT / "grammars" / "json.trg").read_text(encoding="utf-8"))
    masks = precompute(art, table)
    path = tmp_path / "json.trm"
    trm.save_masks(masks, path)
    cache = DiskCache(tmp_path / "cache")
    key = trm_key(bind(art, table).file_key, trm.VERSION)
    assert cache.put_file(key, path)
    out = tmp_path / "back.trm"
    out.write_bytes(DiskCache(tmp_path / "cache").get(key))
    back = trm.load_masks(out, binding=bind(art, table))
    assert trm.to_bytes(back) == trm.to_bytes(masks)


# -- several processes at once -------------------------------------------------------------------

WORKER = r"""
import hashlib, sys
from dataclasses import replace
from trgc.engine.diskcache import DiskCache, EntryKey
root, seed, rounds, bound = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
key0 = EntryKey("frame", 1, "sha256:t", "0.1.0", "p", "")
cache = DiskCache(root, max_bytes=bound)
def payload(n):
    d = hashlib.sha256(str(n).encode()).digest()
    return (d * (40 + n % 60))
wrong = 0
for i in range(rounds):
    n = (i * 7 + seed * 13) % 40  # 40 keys shared by every worker
    key = replace(key0, subject=str(n))
    got = cache.get(key)
    if got is None:
        cache.put(key, payload(n))
    elif got != payload(n):
        wrong += 1
    if seed == 0 and i % 50 == 25:
        cache.clear()
print(wrong, cache.stats.hits, sum(cache.stats.refused.values()), cache.stats.writes)
"""


def test_concurrent_processes_share_one_directory(tmp_path):
    bound = 40_000  # well below the 40 entries' ~100 KB: eviction runs all the time
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path), str(seed), "300", str(bound)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in range(4)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append([int(x) for x in out.split()])
    assert all(wrong == 0 for wrong, *_ in results)  # no process ever read another's bytes
    assert all(refused == 0 for _, _, refused, _ in results)  # never a half-written file
    assert sum(hits for _, hits, _, _ in results) > 0
    assert sum(writes for *_, writes in results) > 40  # evicted entries were written again
    cache = DiskCache(tmp_path, max_bytes=bound)
    assert cache.info().temporaries == 0
    assert cache.info().bytes <= bound
    assert cache.prune(verify=True).refused == {}
