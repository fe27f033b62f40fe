"""Schemas of the /resource_classes bodies.

Only custom classes can be created or renamed, so every name a client
sends must match ``CUSTOM_[A-Z0-9_]+``.  From microversion 1.7, PUT has no
body and the name in the URL is checked against :data:`NAMED`.
"""

from __future__ import annotations

from placement.schemas.common import CUSTOM_RESOURCE_CLASS, Schema, obj, versioned

# {"name": "CUSTOM_..."}: the POST body, the 1.2-1.6 PUT (rename) body, and
# the object the 1.7+ PUT builds from its URL to validate the name.
NAMED: Schema = obj(required=["name"], name=CUSTOM_RESOURCE_CLASS)

CREATE = versioned({(1, 2): NAMED})
RENAME = versioned({(1, 2): NAMED})
