"""The schema: every table placement stores, defined once.

The alembic migrations in ``db/migrations`` must build exactly this schema;
``tests/db/test_migrations.py`` compares the two on every backend.

Design notes:

* Providers point at their root and parent by integer id; a provider that
  is its own root has ``root_provider_id = id``.  Queries over trees join on
  ``root_provider_id`` instead of walking parents.
* Standard resource classes and traits are rows like custom ones, synced
  from os-resource-classes and os-traits, so every class and trait has one
  integer id.  Class ids are numbered as OpenStack Placement numbers them
  (:func:`standard_class_id`, :data:`CUSTOM_CLASS_MIN_ID`), so that upstream
  can take a database of ours back and tell standard classes from custom
  ones by id as it does.
* Allocations reference consumers by uuid (the consumer row carries
  project, user, type and generation), which lets an allocation be written
  in the same statement batch that creates its consumer.
"""

from __future__ import annotations

import os_resource_classes
import sqlalchemy as sa

metadata = sa.MetaData()

# Upstream gives custom classes ids from here up, and refuses to rename or
# delete a class with a smaller id.
CUSTOM_CLASS_MIN_ID = 10000


def standard_class_id(name: str) -> int:
    """The id of standard class ``name``: its place in os-resource-classes'
    list, which only ever grows at the end."""
    return os_resource_classes.STANDARDS.index(name)

# Lengths are those of the wire format: uuids are 36 characters, names of
# providers 200, names of classes and traits 255.
_UUID = sa.String(36)


def _timestamps() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=True),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    ]


resource_providers = sa.Table(
    "resource_providers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", _UUID, nullable=False),
    sa.Column("name", sa.Unicode(200), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    sa.Column("root_provider_id", sa.Integer, nullable=True),
    sa.Column("parent_provider_id", sa.Integer, nullable=True),
    *_timestamps(),
    sa.UniqueConstraint("uuid", name="uniq_resource_providers0uuid"),
    sa.UniqueConstraint("name", name="uniq_resource_providers0name"),
    sa.Index("resource_providers_root_provider_id_idx", "root_provider_id"),
    sa.Index("resource_providers_parent_provider_id_idx", "parent_provider_id"),
    # Ids of deleted providers are not handed out again (migration 0002).
    sqlite_autoincrement=True,
)

resource_classes = sa.Table(
    "resource_classes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("name", name="uniq_resource_classes0name"),
)

inventories = sa.Table(
    "inventories",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
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
        "resource_provider_id",
        "resource_class_id",
        name="uniq_inventories0resource_provider_resource_class",
    ),
    sa.Index("inventories_resource_class_id_idx", "resource_class_id"),
)

allocations = sa.Table(
    "allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("resource_provider_id", sa.Integer, nullable=False),
    sa.Column("consumer_id", _UUID, nullable=False),
    sa.Column("resource_class_id", sa.Integer, nullable=False),
    sa.Column("used", sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index(
        "allocations_resource_provider_class_used_idx",
        "resource_provider_id",
        "resource_class_id",
        "used",
    ),
    sa.Index("allocations_resource_class_id_idx", "resource_class_id"),
    sa.Index("allocations_consumer_id_idx", "consumer_id"),
)

projects = sa.Table(
    "projects",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("external_id", sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("external_id", name="uniq_projects0external_id"),
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("external_id", sa.String(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("external_id", name="uniq_users0external_id"),
)

consumer_types = sa.Table(
    "consumer_types",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("name", name="uniq_consumer_types0name"),
)

consumers = sa.Table(
    "consumers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", _UUID, nullable=False),
    sa.Column("project_id", sa.Integer, nullable=False),
    sa.Column("user_id", sa.Integer, nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, server_default="0"),
    # NULL means "unknown": written before microversion 1.38.
    sa.Column("consumer_type_id", sa.Integer, nullable=True),
    *_timestamps(),
    sa.UniqueConstraint("uuid", name="uniq_consumers0uuid"),
    sa.Index("consumers_project_id_user_id_uuid_idx", "project_id", "user_id", "uuid"),
    sa.Index("consumers_consumer_type_id_idx", "consumer_type_id"),
)

traits = sa.Table(
    "traits",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.Unicode(255), nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("name", name="uniq_traits0name"),
)

resource_provider_traits = sa.Table(
    "resource_provider_traits",
    metadata,
    sa.Column("trait_id", sa.Integer, primary_key=True, nullable=False),
    sa.Column("resource_provider_id", sa.Integer, primary_key=True, nullable=False),
    *_timestamps(),
    sa.Index("resource_provider_traits_resource_provider_trait_idx",
             "resource_provider_id", "trait_id"),
)

placement_aggregates = sa.Table(
    "placement_aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", _UUID, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("uuid", name="uniq_placement_aggregates0uuid"),
)

resource_provider_aggregates = sa.Table(
    "resource_provider_aggregates",
    metadata,
    sa.Column("resource_provider_id", sa.Integer, primary_key=True, nullable=False),
    sa.Column("aggregate_id", sa.Integer, primary_key=True, nullable=False),
    *_timestamps(),
    sa.Index("resource_provider_aggregates_aggregate_id_idx", "aggregate_id"),
)

# Bare-metal allocations (Ironic's /v1/allocations, placement/wsgi/baremetal.py).
# The node an active allocation holds is also claimed in ``allocations``,
# by a consumer whose uuid is the allocation's; ``node_uuid`` names that
# provider so that lists can filter and show it without a join.  traits,
# candidate_nodes and extra are JSON texts, stored as given.
baremetal_allocations = sa.Table(
    "baremetal_allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", _UUID, nullable=False),
    sa.Column("name", sa.Unicode(255), nullable=True),
    sa.Column("node_uuid", _UUID, nullable=True),
    sa.Column("state", sa.String(15), nullable=False),
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Column("resource_class", sa.String(80), nullable=True),
    sa.Column("traits", sa.Text, nullable=True),
    sa.Column("candidate_nodes", sa.Text, nullable=True),
    sa.Column("extra", sa.Text, nullable=True),
    sa.Column("owner", sa.String(255), nullable=True),
    *_timestamps(),
    sa.UniqueConstraint("uuid", name="uniq_baremetal_allocations0uuid"),
    sa.UniqueConstraint("name", name="uniq_baremetal_allocations0name"),
    sa.Index("baremetal_allocations_node_uuid_idx", "node_uuid"),
    sa.Index("baremetal_allocations_owner_idx", "owner"),
)

# One row per committed write on MySQL/MariaDB (db/commit_marks.py): the
# writer inserts it with its transaction, so that the row exists exactly
# when the transaction committed.  ``written_at`` (milliseconds since the
# epoch, by the writer's clock) leads the key, so that old rows are deleted
# by a range of the primary key; ``aborted`` is set only on the row a
# writer inserts itself to close the door on a transaction that did not
# commit.  Unused, and empty, on PostgreSQL and SQLite.
commit_marks = sa.Table(
    "commit_marks",
    metadata,
    sa.Column("written_at", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("token", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("aborted", sa.Boolean, nullable=False),
)

# How many times each provider has lost allocations (db/allocation_removals.py):
# every transaction deleting allocation rows adds one for each provider
# that lost some.  Adding allocations bumps the provider's generation, so a
# provider's usage changes only when its generation or this count does,
# and a worker reads usage again only then (placement/kept).  No row means
# none counted yet (0): providers created before the table, or that never
# lost an allocation.  Upstream Placement never reads it.
allocation_removals = sa.Table(
    "allocation_removals",
    metadata,
    sa.Column("resource_provider_id", sa.Integer, primary_key=True,
              autoincrement=False),
    sa.Column("removals", sa.BigInteger, nullable=False),
)
