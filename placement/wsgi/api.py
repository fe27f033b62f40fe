"""``placement.wsgi.api:application``, the callable WSGI servers load.

Configuration comes from ``/etc/placement/placement.conf`` (or the files
named in ``OS_PLACEMENT_CONFIG_FILES``, comma separated) and from
``OS_<GROUP>__<OPTION>`` environment variables.  Each worker process builds
its own application and connection pool; workers share nothing but the
database, so any number of them, on any number of hosts, may serve together.
"""

from __future__ import annotations

from placement import app, wsgi


def init_application():  # type: ignore[no-untyped-def]
    return wsgi.application(app.build_app, warm=app.warm)


application = init_application()
