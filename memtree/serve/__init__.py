"""Long-lived processes over one memory root, and the ways agents and people reach it. Among them:

- ``watch``: keep the index in step with edits (`memtree watch`; the daemon runs one too).
- ``daemon``: `memtree serve`, one warm MemTree per root; ``unix`` (its socket), ``http`` (loopback
  HTTP with a token), ``dispatch`` (answering a request), ``verbs`` (the JSON API),
  ``maintenance`` (consolidation ticks).
- ``client`` (find a root's daemon, :class:`~memtree.serve.client.Client` for programs) and
  ``forward`` (the console script's forwarding): light, imported before anything else by the CLI.
- ``mcp``, ``mcp_tools``: the MCP server, over stdio (`memtree mcp`) or the daemon's ``/mcp``.
- ``viewer/``: the memory viewer (`memtree view`): its routes on the daemon, its data, its page.
- ``claude_memory/``: Claude's memory tool served from the root (the ``anthropic`` SDK).

May import: everything below (api, schema and the layers under them); never memtree.cli (the CLI
layer hands the daemon its command runner). memtree.cli may import ``client`` and ``forward``.
"""
