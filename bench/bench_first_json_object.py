"""first_json_object (the `first_json_object` extraction rule, grading/answers.py) on hostile
answers: its time grows with the text's length, not its square (issue 40, defect 5: "{" * N took
1.7 s at 100 KB, 25 s at 400 KB and did not finish in 115 s at 10 MB).

Prints, per size, the seconds for "{" * N, "{" * N + "}", "{ " * N/2 + "}" (no run of braces to
skip) and a well-formed object of that size, and the ratio of the largest to the smallest size
per shape (linear: about the ratio of sizes, 100). Usage: python bench/bench_first_json_object.py
"""

from __future__ import annotations

import json
import time

from pytps.grading.answers import first_json_object

SIZES = (100_000, 400_000, 10_000_000)
SHAPES = {
    "{ * N": lambda n: "{" * n,
    "{ * N + }": lambda n: "{" * n + "}",
    "'{ ' * N/2 + }": lambda n: "{ " * (n // 2) + "}",
    "valid object": lambda n: json.dumps({"k": "x" * n}),
}


def main() -> None:
    print(f"{'shape':<16}" + "".join(f"{n:>14,} B" for n in SIZES) + f"{'ratio':>10}")
    for name, make in SHAPES.items():
        times = []
        for n in SIZES:
            text = make(n)
            t = time.perf_counter()
            first_json_object(text)
            times.append(time.perf_counter() - t)
        ratio = times[-1] / max(times[0], 1e-6)
        print(f"{name:<16}" + "".join(f"{s:>14.3f} s" for s in times) + f"{ratio:>10.0f}")


if __name__ == "__main__":
    main()
