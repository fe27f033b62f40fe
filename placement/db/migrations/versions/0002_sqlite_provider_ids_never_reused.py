"""SQLite: a deleted resource provider's id is never given to a new one.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24

Without AUTOINCREMENT, SQLite numbers a new row one past the largest id
in the table, so deleting the newest provider and creating another hands
out the same id again.  Workers keep what they read of a provider under
its id, generation and uuid (placement/kept/); a
provider deleted and created again under the same uuid (nova does so when
a compute service is registered anew) would match all three and be judged
on the deleted provider's inventories.  AUTOINCREMENT makes SQLite keep
the highest id ever used.  SQLite cannot add it to a table in place, so
the table is rebuilt; its rows keep their ids.  PostgreSQL sequences and
InnoDB (MariaDB 10.2.4+, MySQL 8.0+) never reuse ids already.
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_context().dialect.name != "sqlite":
        return
    with op.batch_alter_table("resource_providers", recreate="always",
                              table_kwargs={"sqlite_autoincrement": True}):
        pass
