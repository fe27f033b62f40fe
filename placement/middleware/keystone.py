"""``auth_strategy = keystone``: keystonemiddleware's auth_token, adapted.

``auth_token`` validates ``X-Auth-Token`` with the identity service named
in ``[keystone_authtoken]`` and replaces the identity headers with what
keystone says (``X-User-Id``, ``X-Project-Id``, ``X-Roles``, scope ...);
a missing or invalid token gets its 401 with ``WWW-Authenticate``.

Around it, public paths (the root document, for version discovery) skip
authentication altogether.  Inside it, a request that reached the
application without an identity (possible with ``delay_auth_decision``)
is refused with 401 too, which auth_token decorates with
``WWW-Authenticate``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from keystonemiddleware import auth_token
from oslo_config import cfg

from placement import errors
from placement.middleware.errors import error_response

WSGIApp = Callable[..., Iterable[bytes]]


def authenticated(application: WSGIApp, conf: cfg.ConfigOpts,
                  is_public: Callable[[dict[str, Any]], bool]) -> WSGIApp:
    """``application`` behind keystone authentication, public paths aside."""
    protected = auth_token.AuthProtocol(
        RequireIdentity(application), {"oslo_config_config": conf})
    return PublicPathBypass(protected, application, is_public)


class RequireIdentity:
    """401 unless authentication established who the caller is."""

    def __init__(self, application: WSGIApp) -> None:
        self.application = application

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if not (environ.get("HTTP_X_USER_ID") or environ.get("HTTP_X_USER")):
            exc = errors.Unauthorized(
                "The request you have made requires authentication.")
            return error_response(environ, exc)(environ, start_response)
        return self.application(environ, start_response)


class PublicPathBypass:
    """Lets public paths skip an authenticating middleware."""

    def __init__(
        self,
        authenticated: WSGIApp,
        unauthenticated: WSGIApp,
        is_public: Callable[[dict[str, Any]], bool],
    ) -> None:
        self.authenticated = authenticated
        self.unauthenticated = unauthenticated
        self.is_public = is_public

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self.is_public(environ):
            return self.unauthenticated(environ, start_response)
        return self.authenticated(environ, start_response)
