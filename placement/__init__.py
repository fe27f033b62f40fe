"""A clean-room implementation of the OpenStack Placement service."""

__version__ = "0.1.0"
