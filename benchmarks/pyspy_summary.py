"""Summarise py-spy ``--format raw`` profiles of the server's workers.

``py-spy record -p PID -r 250 -d 12 --gil -f raw -o FILE`` writes one line
per distinct stack (``frame;frame;... count``).  This prints, over all the
files given, the functions with the most samples inclusive (a function
counted once per stack however deep it recurses) and exclusive, so that a
profile of a benchmark run can be read without a flame-graph viewer::

    python3 -m benchmarks.pyspy_summary /tmp/w1.raw /tmp/w2.raw --top 40
    python3 -m benchmarks.pyspy_summary /tmp/w*.raw --under replace_all

``--under NAME`` keeps only the stacks that pass through a function whose
name contains NAME, to see where one handler's time goes.
"""

from __future__ import annotations

import argparse
import collections
import re
from typing import Iterable

# "name (path/to/file.py:123)" -> name and file, the line dropped so that
# one function's samples at different lines add up.
_FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^:()]+)(?::\d+)?\)$")


def _frame_key(frame: str) -> str:
    match = _FRAME.match(frame)
    if not match:
        return frame
    path = match.group("file")
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return "%s (%s)" % (match.group("name"), path)


def read_stacks(paths: Iterable[str]) -> list[tuple[list[str], int]]:
    stacks = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                stack, _, count = line.rpartition(" ")
                if not stack or not count.isdigit():
                    continue
                stacks.append(([_frame_key(fr) for fr in stack.split(";")],
                               int(count)))
    return stacks


def summarise(stacks: list[tuple[list[str], int]], top: int) -> str:
    total = sum(count for _, count in stacks) or 1
    inclusive: collections.Counter[str] = collections.Counter()
    exclusive: collections.Counter[str] = collections.Counter()
    for frames, count in stacks:
        for key in set(frames):
            inclusive[key] += count
        exclusive[frames[-1]] += count
    lines = ["%d samples" % total]
    for title, counter in (("inclusive", inclusive), ("exclusive", exclusive)):
        lines += ["", title + ":"]
        lines += ["%6.1f%%  %s" % (100.0 * count / total, key)
                  for key, count in counter.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--under", help="only stacks through a function "
                        "whose name contains this")
    args = parser.parse_args()
    stacks = read_stacks(args.files)
    if args.under:
        stacks = [(frames, count) for frames, count in stacks
                  if any(args.under in frame.split(" (")[0] for frame in frames)]
    print(summarise(stacks, args.top))


if __name__ == "__main__":
    main()
