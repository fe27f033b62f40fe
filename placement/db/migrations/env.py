"""Alembic environment: runs on the connection handed over by
:mod:`placement.db.migration`, never on a URL of its own."""

from alembic import context

from placement.db import tables

config = context.config
connection = config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=tables.metadata,
    version_table=config.attributes["version_table"],
    render_as_batch=connection.dialect.name == "sqlite",
    transaction_per_migration=True,
)
with context.begin_transaction():
    context.run_migrations()
