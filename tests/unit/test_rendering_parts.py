"""Large bodies are sent in parts of bounded size (placement.rendering.joined):
the same bytes as one join, without a second copy of the whole answer."""

from __future__ import annotations

import random

import pytest

from placement import rendering


@pytest.mark.parametrize("seed", range(20))
def test_the_parts_are_the_texts_joined(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rendering, "PART_SIZE", 64)
    chance = random.Random(seed)
    texts = [b"x" * chance.randrange(1, 50) for _ in range(chance.randrange(0, 40))]
    parts = rendering.joined(texts)
    assert b"".join(parts) == b", ".join(texts)
    # No part holds more than PART_SIZE bytes but for its last text, and
    # every part but the last reaches PART_SIZE (with the separators
    # counted after each of its texts): no part is cut short.
    assert all(len(part) < 64 + 50 + 2 for part in parts)
    assert all(len(part.removeprefix(b", ")) + 2 >= 64 for part in parts[:-1])
    if sum(len(text) + 2 for text in texts) > 3 * 64:
        assert len(parts) > 2


def test_no_texts_no_parts() -> None:
    assert rendering.joined([]) == []


def test_a_small_body_is_one_part() -> None:
    assert rendering.joined([b"a", b"b", b"c"]) == [b"a, b, c"]
