"""The ``memtree`` command: typer commands and rendering. Each command parses options, makes one call on
``memtree.api.MemTree`` and renders the result (rich, or JSON through ``memtree.schema``).

May import: everything below (api, schema and the layers under them).
"""
