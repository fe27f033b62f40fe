"""What a worker derived from an object it keeps between requests.

The candidate search and the provider list keep trees, candidate lists
and providers while the database says they are unchanged, and the
response writes the same JSON for them every time.  Each such object has
a ``memo`` slot holding ``(key, value)``: the last thing a caller derived
from it and under which key (a microversion, a URL prefix).  One pair,
not a dict, because these objects number in the tens of thousands and a
client mostly asks at one microversion; a caller asking under another key
derives the value again and replaces the pair, in one assignment, so
requests in threads never see a key with another key's value.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Protocol, TypeVar

Value = TypeVar("Value")


class Memoized(Protocol):
    memo: tuple[Hashable, Any] | None


Holder = TypeVar("Holder", bound=Memoized)


def recall(holder: Memoized, key: Hashable) -> Any:
    """What was kept in ``holder.memo`` under ``key``, else None."""
    kept = holder.memo
    return kept[1] if kept is not None and kept[0] == key else None


def keep(holder: Memoized, key: Hashable, value: Any) -> None:
    holder.memo = (key, value)


def remembered(holder: Holder, key: Hashable, derive: Callable[[Holder], Value]
               ) -> Value:
    """What ``derive(holder)`` gives, kept in ``holder.memo`` under ``key``."""
    value = recall(holder, key)
    if value is None:
        value = derive(holder)
        keep(holder, key, value)
    return value  # type: ignore[no-any-return]
