"""CPython's ``random.Random(seed)`` in plain Python, so an adapted BFCL module keeps its draws
without importing ``random`` (DESIGN §3.1: no randomness in environment code).

The generator is MT19937 seeded as CPython seeds it from an int (``init_by_array`` over the
32-bit words of ``abs(seed)``), and ``randint``/``randrange``/``uniform``/``random``/``choice``/
``shuffle``/``getrandbits`` draw exactly as ``random.Random`` does (3.11's algorithms). Its state
is two numbers, ``seed`` and ``drawn`` (32-bit words drawn so far): ``restore`` rebuilds the
generator from them, so an environment keeps only those in its JSON state.

This file is inlined into every adapted module that draws numbers (``adapt.py``), so it obeys
the environment policy: allowed imports only, no dunders, one private class.
"""

MT_N = 624
MT_M = 397
MT_MATRIX = 0x9908B0DF
MT_UPPER = 0x80000000
MT_LOWER = 0x7FFFFFFF
MT_WORD = 0xFFFFFFFF


def mt_init_genrand(seed: int) -> list[int]:
    """The state ``init_genrand(seed)`` makes (MT19937's reference seeding)."""
    mt = [0] * MT_N
    mt[0] = seed & MT_WORD
    for i in range(1, MT_N):
        mt[i] = (1812433253 * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i) & MT_WORD
    return mt


def mt_init_by_array(key: list[int]) -> list[int]:
    """The state ``init_by_array(key)`` makes, as CPython's ``random_seed`` calls it."""
    mt = mt_init_genrand(19650218)
    i, j = 1, 0
    for _ in range(max(MT_N, len(key))):
        mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525)) + key[j] + j) & MT_WORD
        i, j = i + 1, j + 1
        if i >= MT_N:
            mt[0], i = mt[MT_N - 1], 1
        if j >= len(key):
            j = 0
    for _ in range(MT_N - 1):
        mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941)) - i) & MT_WORD
        i += 1
        if i >= MT_N:
            mt[0], i = mt[MT_N - 1], 1
    mt[0] = 0x80000000
    return mt


def mt_key(seed: int) -> list[int]:
    """The 32-bit words of ``abs(seed)``, least significant first (``[0]`` for zero)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError("the seed must be an int")
    n = abs(seed)
    key = []
    while n:
        key.append(n & MT_WORD)
        n >>= 32
    return key or [0]


def mt_twist(mt: list[int]) -> None:
    """Regenerate the 624 words in place."""
    for k in range(MT_N):
        y = (mt[k] & MT_UPPER) | (mt[(k + 1) % MT_N] & MT_LOWER)
        mt[k] = mt[(k + MT_M) % MT_N] ^ (y >> 1) ^ (MT_MATRIX if y & 1 else 0)


def mt_temper(y: int) -> int:
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    return y ^ (y >> 18)


class _SeededRandom:
    """``random.Random(seed)`` for the methods BFCL's classes use, with a JSON-sized state."""

    def __init__(self, seed: int = 0) -> None:
        self.restore(seed, 0)

    def restore(self, seed: int, drawn: int) -> None:
        """The generator ``random.Random(seed)`` becomes after ``drawn`` 32-bit words."""
        self.seed = seed
        self.drawn = drawn
        self.words = mt_init_by_array(mt_key(seed))
        self.index = MT_N
        twists = (drawn + MT_N - 1) // MT_N
        for _ in range(twists):
            mt_twist(self.words)
        if twists:
            self.index = drawn - MT_N * (twists - 1)

    def next_word(self) -> int:
        if self.index >= MT_N:
            mt_twist(self.words)
            self.index = 0
        word = self.words[self.index]
        self.index += 1
        self.drawn += 1
        return mt_temper(word)

    def getrandbits(self, k: int) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        if k <= 32:
            return self.next_word() >> (32 - k) if k else 0
        result, shift = 0, 0
        while k > 0:
            word = self.next_word()
            if k < 32:
                word >>= 32 - k
            result |= word << shift
            shift, k = shift + 32, k - 32
        return result

    def random(self) -> float:
        a = self.next_word() >> 5
        b = self.next_word() >> 6
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)

    def randbelow(self, n: int) -> int:
        k = n.bit_length()
        r = self.getrandbits(k)
        while r >= n:
            r = self.getrandbits(k)
        return r

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        if stop is None:
            if start > 0:
                return self.randbelow(start)
            raise ValueError("empty range for randrange()")
        width = stop - start
        if step == 1:
            if width > 0:
                return start + self.randbelow(width)
            raise ValueError(f"empty range for randrange() ({start}, {stop}, {width})")
        if step > 0:
            n = (width + step - 1) // step
        elif step < 0:
            n = (width + step + 1) // step
        else:
            raise ValueError("zero step for randrange()")
        if n <= 0:
            raise ValueError("empty range for randrange()")
        return start + step * self.randbelow(n)

    def randint(self, a: int, b: int) -> int:
        return self.randrange(a, b + 1)

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.random()

    def choice(self, seq: list) -> object:
        if not len(seq):
            raise IndexError("Cannot choose from an empty sequence")
        return seq[self.randbelow(len(seq))]

    def shuffle(self, x: list) -> None:
        for i in range(len(x) - 1, 0, -1):
            j = self.randbelow(i + 1)
            x[i], x[j] = x[j], x[i]
