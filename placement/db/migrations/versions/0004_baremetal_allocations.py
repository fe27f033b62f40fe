"""The records of the bare-metal allocation API (Ironic's /v1/allocations).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

One row per allocation: what was asked for (resource class, traits,
candidate nodes), its state and the node it holds.  The claim of the node
itself is an ordinary row of ``allocations``, by a consumer whose uuid is
the allocation's, so nothing else changes.
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "baremetal_allocations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.Unicode(255), nullable=True),
        sa.Column("node_uuid", sa.String(36), nullable=True),
        sa.Column("state", sa.String(15), nullable=False),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("resource_class", sa.String(80), nullable=True),
        sa.Column("traits", sa.Text, nullable=True),
        sa.Column("candidate_nodes", sa.Text, nullable=True),
        sa.Column("extra", sa.Text, nullable=True),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
        sa.UniqueConstraint("uuid", name="uniq_baremetal_allocations0uuid"),
        sa.UniqueConstraint("name", name="uniq_baremetal_allocations0name"),
    )
    op.create_index("baremetal_allocations_node_uuid_idx",
                    "baremetal_allocations", ["node_uuid"])
    op.create_index("baremetal_allocations_owner_idx",
                    "baremetal_allocations", ["owner"])
