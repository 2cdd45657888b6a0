"""The recorded random number generator: xoshiro256** seeded by SplitMix64, in plain integers.

Replay must reproduce every draw on any machine, so the generator is named, its raw 64-bit
stream is specified here and in docs/sampling.md, and it is implemented with explicit
`& MASK64` arithmetic on Python integers (no numpy bit generator whose stream could change).

* SplitMix64 (Steele, Lea, Flood 2014; Vigna's public-domain reference `splitmix64.c`) turns
  the 64-bit seed into the four state words of xoshiro256**.
* xoshiro256** 1.0 (Blackman and Vigna 2018, `xoshiro256starstar.c`) produces the stream.
* A uniform double is `(next() >> 11) * 2**-53`: the top 53 bits, so every value is an exact
  multiple of 2**-53 in [0, 1).
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1
ALGORITHM = "xoshiro256**-splitmix64"
_TWO_POW_MINUS_53 = 1.0 / (1 << 53)


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK64


class SplitMix64:
    """SplitMix64: state += 0x9E3779B97F4A7C15, then a fixed 64-bit mix of the state."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


class Xoshiro256StarStar:
    """xoshiro256**: 256-bit state, output rotl(s1 * 5, 7) * 9. `draws` counts outputs taken."""

    def __init__(self, state: tuple[int, int, int, int]) -> None:
        if len(state) != 4 or not any(state):
            raise ValueError("xoshiro256** needs four 64-bit words, not all zero")
        self.s = [w & MASK64 for w in state]
        self.draws = 0

    @classmethod
    def from_seed(cls, seed: int) -> Xoshiro256StarStar:
        """Seed the state with the first four outputs of SplitMix64(seed)."""
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MASK64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        mixer = SplitMix64(seed)
        return cls((mixer.next(), mixer.next(), mixer.next(), mixer.next()))

    def next(self) -> int:
        s = self.s
        result = (_rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        self.draws += 1
        return result

    def next_bits53(self) -> int:
        """The top 53 bits of the next output: an integer in [0, 2**53)."""
        return self.next() >> 11

    def next_double(self) -> float:
        """A uniform double in [0, 1), an exact multiple of 2**-53."""
        return self.next_bits53() * _TWO_POW_MINUS_53


def bits53_to_unit(bits: int) -> float:
    """The double `bits * 2**-53` (exact) for a 53-bit draw recorded in a trace."""
    return bits * _TWO_POW_MINUS_53
