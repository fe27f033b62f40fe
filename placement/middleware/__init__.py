"""WSGI middleware, one per module; ``placement.app`` assembles them."""
