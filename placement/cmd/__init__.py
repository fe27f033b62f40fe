"""Command line tools: placement-api, placement-manage, placement-status."""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator

from placement.db import migration
from placement.db.api import Database


class Refused(Exception):
    """The command stops; what it printed says why."""


@contextlib.contextmanager
def database_failures_said(prog: str, db: Database) -> Iterator[None]:
    """Turn a refused schema, or a database failure the operator can act
    on (wrong password, server gone), into one line on stderr and
    :class:`Refused`; anything else is a bug and keeps its traceback."""
    try:
        yield
    except migration.SchemaRefused as exc:
        print("%s: %s" % (prog, exc), file=sys.stderr)
        raise Refused() from exc
    except Exception as exc:
        message = db.explain(exc)
        if message is None:
            raise
        print("%s: %s" % (prog, message), file=sys.stderr)
        raise Refused() from exc
