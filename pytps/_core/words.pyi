"""The synthetic workload's prompt words, drawn natively (issue 42)."""

def shuffled_words(seed: bytes, words: tuple[str, ...], k: int) -> list[str]:
    """pytps.workload.synthetic._shuffled_words(random.Random(int.from_bytes(seed)), k) over `words`:
    the same k words, drawn in C++."""

def shuffled_words_text(seed: bytes, words: tuple[str, ...], k: int) -> str:
    """The words of shuffled_words(seed, words, k) joined by single spaces, without their list."""
