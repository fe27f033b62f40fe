"""The request context: who is asking, for which request, with what config.

Built once per request by ``middleware/context.py`` from the identity
headers that keystonemiddleware (or noauth2) set, and reached by handlers as
``req.ctx``.  Objects take it as their first argument for the database.
"""

from __future__ import annotations

from typing import Any

from oslo_config import cfg
from oslo_context import context as oslo_context

from placement.db.api import Database
from placement import kept as kept_store


class RequestContext(oslo_context.RequestContext):
    def __init__(
        self,
        *args: Any,
        config: cfg.ConfigOpts,
        db: Database,
        kept: kept_store.Kept | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.config = config
        self.db = db
        self._kept = kept

    @property
    def kept(self) -> kept_store.Kept:
        """What the worker keeps of this database between requests: the
        one given, else the worker's own store for the database (looked
        up when first needed: finding it opens the database)."""
        if self._kept is None:
            self._kept = kept_store.of(self.db.engine)
        return self._kept

    @property
    def kept_if_used(self) -> kept_store.Kept | None:
        """The store this request used, if it used one (without looking
        one up, which would open the database)."""
        return self._kept
