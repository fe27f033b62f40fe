"""Sphinx configuration for the placement API reference.

Plain Sphinx, no extensions: ``tox -e docs`` builds it with warnings as
errors (``sphinx-build -W -b html api-ref/source api-ref/build/html``).
"""

project = "Placement API Reference"
author = "placement contributors"
copyright = "placement contributors"

master_doc = "index"
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build"]

# The code blocks are JSON documents and HTTP exchanges.
highlight_language = "none"
pygments_style = "sphinx"

html_theme = "alabaster"
html_title = "Placement API Reference"
html_show_sourcelink = False
