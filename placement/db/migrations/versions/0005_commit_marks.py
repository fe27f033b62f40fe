"""The commit marks of MySQL/MariaDB writes (db/commit_marks.py).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25

A table of our own, like ``baremetal_allocations``: upstream Placement
never reads it, so a database handed back to upstream keeps it unused.
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "commit_marks",
        sa.Column("written_at", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("token", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("aborted", sa.Boolean, nullable=False),
    )
