"""The memory viewer: a read-and-edit page for a person, served by the daemon under ``/view/``.

- ``routes``: the page's routes on the daemon's HTTP server and their guards (one-time code,
  session cookie, same-origin checks, Content-Security-Policy).
- ``data``: what the page asks for beyond the CLI's shapes — cards, the tree, a version, explain.
- ``link``: what ``memtree view`` does before a browser opens — find or start the root's HTTP
  daemon and ask it for a link.
- ``index.html``, ``app.js``, ``app.css``: the page itself (every piece of memory rendered as text).
"""
