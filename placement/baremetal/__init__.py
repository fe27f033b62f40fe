"""The edge of the bare-metal allocation API (OpenStack Ironic's
``/v1/allocations``), served by ``placement.wsgi.baremetal:application``.

This sub-package holds what differs from the Placement API at the HTTP
edge: Ironic's version negotiation (``microversion.py``), its error body
(``faults.py``), its route table (``routes.py``) and the application that
puts them together (``app.py``).  Everything behind the edge follows the
Placement layers, with a ``baremetal_`` prefix so that each layer folder
shows both APIs side by side: ``handlers/baremetal_*.py``,
``schemas/baremetal_allocation.py``, ``policies/baremetal_allocation.py``,
``objects/baremetal_node.py`` (nodes: root providers, read only) and
``objects/baremetal_allocation.py`` (the records, and the claims, made
through ``objects/allocation.py``); all the SQL is in those two.
"""
