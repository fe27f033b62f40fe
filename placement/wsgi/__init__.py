"""WSGI entry points for application servers."""
