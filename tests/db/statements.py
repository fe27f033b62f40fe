"""What the statement-running tests share: a migrated database holding
five providers to read back."""

from __future__ import annotations

import contextlib
import datetime
from typing import Any, Iterator

from placement.db import migration, tables
from placement.db.api import Database
from tests import backends
from tests.functional.fixtures import make_conf

# The creation time of every provider: a datetime parameter to compare.
NOW = datetime.datetime(2026, 1, 2, 3, 4, 5)


@contextlib.contextmanager
def five_providers(backend: str, **database_options: Any) -> Iterator[Database]:
    """A fresh migrated ``backend`` database (``[placement_database]``
    options as given) holding providers rp1..rp5, of generations 1..5."""
    backends.require(backend)
    with backends.fresh_database(backend) as url:
        database = Database(make_conf(url, placement_database=database_options))
        migration.upgrade(database)
        with database.writer() as conn:
            conn.execute(tables.resource_providers.insert(), [
                {"uuid": "00000000-0000-0000-0000-00000000000%d" % i,
                 "name": "rp%d" % i, "generation": i, "created_at": NOW}
                for i in range(1, 6)])
        try:
            yield database
        finally:
            database.dispose()
