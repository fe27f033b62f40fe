"""JSON schemas of request bodies and query strings, one module per resource.

A schema that changed with a microversion is a :class:`common.Versioned`
table mapping the version that introduced each form to the form.
"""
