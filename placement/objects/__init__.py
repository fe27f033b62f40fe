"""Domain objects and all the SQL that reads and writes them.

One module per resource.  Public functions take the request context first,
run in one transaction each, return frozen dataclasses and raise
:mod:`placement.exceptions`.  Nothing here knows about HTTP.
"""
