"""``placement.wsgi.baremetal:application``: the bare-metal allocation API
(OpenStack Ironic's ``/v1/allocations``) on Placement's database.

Configured exactly as ``placement.wsgi.api`` is (the same files,
``OS_PLACEMENT_CONFIG_FILES``, ``OS_<GROUP>__<OPTION>`` variables,
database, auth strategy and policy file); run it beside the Placement API
and register it as the ``baremetal`` endpoint.
"""

from __future__ import annotations

from placement import wsgi
from placement.baremetal import app


def init_application():  # type: ignore[no-untyped-def]
    return wsgi.application(app.build_app)


application = init_application()
