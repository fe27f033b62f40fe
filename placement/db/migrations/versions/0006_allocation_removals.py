"""Counts of allocation removals per provider (db/allocation_removals.py).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27

A table of our own, like ``commit_marks``: upstream Placement never reads
it, so a database handed back to upstream keeps it unused.  Empty to
start with: a provider without a row has lost no allocation since (0),
which is all a worker compares (placement/kept).
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "allocation_removals",
        sa.Column("resource_provider_id", sa.Integer, primary_key=True,
                  autoincrement=False),
        sa.Column("removals", sa.BigInteger, nullable=False),
    )
