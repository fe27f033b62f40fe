"""``auth_strategy = noauth2``: trust the token to say who the caller is.

``X-Auth-Token: <user>[:<project>]`` sets the user and project (the project
defaults to the user).  The user ``admin`` always has the admin role; other
roles come from ``X-Roles``.  A request without a token is refused with
401, except for public paths such as the root document.  For development
and tests only: it authenticates nobody.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from placement import errors
from placement.middleware.errors import error_response


class NoAuthMiddleware:
    def __init__(
        self,
        application: Callable[..., Iterable[bytes]],
        is_public: Callable[[str], bool],
    ) -> None:
        self.application = application
        self.is_public = is_public

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self.is_public(environ.get("PATH_INFO", "/")):
            return self.application(environ, start_response)
        token = environ.get("HTTP_X_AUTH_TOKEN")
        if not token:
            exc = errors.Unauthorized("No X-Auth-Token header was provided.")
            return error_response(environ, exc)(environ, start_response)
        user_id, _sep, project_id = token.partition(":")
        project_id = project_id or user_id
        roles = [r.strip() for r in environ.get("HTTP_X_ROLES", "").split(",")
                 if r.strip()]
        if user_id == "admin" and "admin" not in roles:
            roles.append("admin")
        environ["HTTP_X_USER_ID"] = user_id
        environ["HTTP_X_PROJECT_ID"] = project_id
        environ["HTTP_X_TENANT_ID"] = project_id
        environ["HTTP_X_ROLES"] = ",".join(roles)
        environ["HTTP_X_IDENTITY_STATUS"] = "Confirmed"
        return self.application(environ, start_response)


class PublicPathBypass:
    """Lets public paths skip an authenticating middleware (keystone)."""

    def __init__(
        self,
        authenticated: Callable[..., Iterable[bytes]],
        unauthenticated: Callable[..., Iterable[bytes]],
        is_public: Callable[[str], bool],
    ) -> None:
        self.authenticated = authenticated
        self.unauthenticated = unauthenticated
        self.is_public = is_public

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self.is_public(environ.get("PATH_INFO", "/")):
            return self.unauthenticated(environ, start_response)
        return self.authenticated(environ, start_response)
