"""Initial schema: everything microversions 1.0 to 1.39 need.

Revision ID: 0001
Revises:
Create Date: 2026-11-22

Written out in full rather than generated from ``tables.py`` at run time:
later revisions change ``tables.py``, and this revision must keep building
the schema as it was when it was written.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    ]


def _id() -> sa.Column:
    return sa.Column("id", sa.Integer, primary_key=True, autoincrement=True)


def upgrade() -> None:
    op.create_table(
        "resource_providers",
        _id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.Unicode(200), nullable=False),
        sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("root_provider_id", sa.Integer, nullable=True),
        sa.Column("parent_provider_id", sa.Integer, nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uniq_resource_providers0uuid"),
        sa.UniqueConstraint("name", name="uniq_resource_providers0name"),
    )
    op.create_index("resource_providers_root_provider_id_idx",
                    "resource_providers", ["root_provider_id"])
    op.create_index("resource_providers_parent_provider_id_idx",
                    "resource_providers", ["parent_provider_id"])

    for name in ("resource_classes",):
        op.create_table(
            name,
            _id(),
            sa.Column("name", sa.String(255), nullable=False),
            *_timestamps(),
            sa.UniqueConstraint("name", name="uniq_resource_classes0name"),
        )

    op.create_table(
        "inventories",
        _id(),
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        sa.Column("resource_class_id", sa.Integer, nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("reserved", sa.Integer, nullable=False),
        sa.Column("min_unit", sa.Integer, nullable=False),
        sa.Column("max_unit", sa.Integer, nullable=False),
        sa.Column("step_size", sa.Integer, nullable=False),
        sa.Column("allocation_ratio", sa.Float, nullable=False),
        *_timestamps(),
        sa.UniqueConstraint(
            "resource_provider_id", "resource_class_id",
            name="uniq_inventories0resource_provider_resource_class"),
    )
    op.create_index("inventories_resource_class_id_idx", "inventories",
                    ["resource_class_id"])

    op.create_table(
        "allocations",
        _id(),
        sa.Column("resource_provider_id", sa.Integer, nullable=False),
        sa.Column("consumer_id", sa.String(36), nullable=False),
        sa.Column("resource_class_id", sa.Integer, nullable=False),
        sa.Column("used", sa.Integer, nullable=False),
        *_timestamps(),
    )
    op.create_index("allocations_resource_provider_class_used_idx", "allocations",
                    ["resource_provider_id", "resource_class_id", "used"])
    op.create_index("allocations_resource_class_id_idx", "allocations",
                    ["resource_class_id"])
    op.create_index("allocations_consumer_id_idx", "allocations", ["consumer_id"])

    for name in ("projects", "users"):
        op.create_table(
            name,
            _id(),
            sa.Column("external_id", sa.String(255), nullable=False),
            *_timestamps(),
            sa.UniqueConstraint("external_id", name="uniq_%s0external_id" % name),
        )

    op.create_table(
        "consumer_types",
        _id(),
        sa.Column("name", sa.Unicode(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("name", name="uniq_consumer_types0name"),
    )

    op.create_table(
        "consumers",
        _id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("project_id", sa.Integer, nullable=False),
        sa.Column("user_id", sa.Integer, nullable=False),
        sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("consumer_type_id", sa.Integer, nullable=True),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uniq_consumers0uuid"),
    )
    op.create_index("consumers_project_id_user_id_uuid_idx", "consumers",
                    ["project_id", "user_id", "uuid"])
    op.create_index("consumers_consumer_type_id_idx", "consumers",
                    ["consumer_type_id"])

    op.create_table(
        "traits",
        _id(),
        sa.Column("name", sa.Unicode(255), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("name", name="uniq_traits0name"),
    )

    op.create_table(
        "resource_provider_traits",
        sa.Column("trait_id", sa.Integer, primary_key=True, nullable=False),
        sa.Column("resource_provider_id", sa.Integer, primary_key=True,
                  nullable=False),
        *_timestamps(),
    )
    op.create_index("resource_provider_traits_resource_provider_trait_idx",
                    "resource_provider_traits", ["resource_provider_id", "trait_id"])

    op.create_table(
        "placement_aggregates",
        _id(),
        sa.Column("uuid", sa.String(36), nullable=False),
        *_timestamps(),
        sa.UniqueConstraint("uuid", name="uniq_placement_aggregates0uuid"),
    )

    op.create_table(
        "resource_provider_aggregates",
        sa.Column("resource_provider_id", sa.Integer, primary_key=True,
                  nullable=False),
        sa.Column("aggregate_id", sa.Integer, primary_key=True, nullable=False),
        *_timestamps(),
    )
    op.create_index("resource_provider_aggregates_aggregate_id_idx",
                    "resource_provider_aggregates", ["aggregate_id"])
