"""``auth_strategy = noauth2``: the caller says who it is, nobody checks.

For development and tests only; it authenticates nobody.  It sets the same
identity headers keystonemiddleware would, following OpenStack Placement's
noauth2 so that test suites written for it behave the same here:

* ``X-Auth-Token: <user>[:<project>]`` gives the user id and the project id;
  the project defaults to the user.  A project id the client sent itself
  in ``X-Project-Id`` takes precedence (the context prefers that header).
* ``X-Roles`` (comma separated), when present, are the roles, exactly and
  only those.  Without it the user ``admin`` has the ``admin`` role and
  anyone else has none.
* ``OpenStack-System-Scope: all`` makes a system-scoped token: no project
  is derived from the token.
* Without a token header the answer is 401, except for public paths such
  as the root document.  An empty token names a user without a name and
  without roles, whom policy then refuses (403), as with Placement.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

import webob.exc

from placement import errors
from placement.middleware.errors import RENDERER_ENVIRON, error_response

WSGIApp = Callable[..., Iterable[bytes]]


class NoAuthMiddleware:
    def __init__(self, application: WSGIApp, is_public: Callable[[dict[str, Any]], bool]
                 ) -> None:
        self.application = application
        self.is_public = is_public

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self.is_public(environ):
            return self.application(environ, start_response)
        token = environ.get("HTTP_X_AUTH_TOKEN")
        if token is None:
            return self._refuse(environ, start_response)
        user_id, _sep, project_id = token.partition(":")
        if "HTTP_X_ROLES" in environ:
            roles = environ["HTTP_X_ROLES"].split(",")
        elif user_id == "admin":
            roles = ["admin"]
        else:
            roles = []
        environ["HTTP_X_USER_ID"] = user_id
        if not environ.get("HTTP_OPENSTACK_SYSTEM_SCOPE"):
            project_id = project_id or user_id
            environ["HTTP_X_TENANT_ID"] = project_id
            environ.setdefault("HTTP_X_PROJECT_ID", project_id)
        environ["HTTP_X_ROLES"] = ",".join(roles)
        return self.application(environ, start_response)

    @staticmethod
    def _refuse(environ: dict[str, Any], start_response: Callable[..., Any]
                ) -> Iterable[bytes]:
        if RENDERER_ENVIRON in environ:
            # An API answering in another format (the bare-metal API:
            # Ironic's) refuses in that format too.
            refusal = error_response(environ, errors.Unauthorized(
                "The request you have made requires authentication."))
            return refusal(environ, start_response)
        # Placement's noauth2 answers with webob's bare 401, not with its
        # own error format: no errors list, no request id inside.
        page = webob.exc.HTTPUnauthorized()
        return page(errors.as_placement_sees_it(environ), start_response)
