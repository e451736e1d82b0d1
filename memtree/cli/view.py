"""`memtree view`: open the memory viewer in the browser (memtree.serve.viewer), starting the HTTP daemon if needed."""

from __future__ import annotations

from typing import Annotated

import typer

from memtree import schema
from memtree.cli.common import JsonOption, RootOption, _dump, _errors, app
from memtree.cli.render import printable

HELP = (
    "Open the memory viewer in the default browser and print its link.\n\n"
    "Starts `memtree serve --http` on a free loopback port when no daemon serves the root (idle, it exits "
    "after serve.idle_timeout_s; an open page keeps it busy). The link holds a one-time code, good for one "
    "browser session within two minutes; the daemon's token stays in .memtree/serve.token."
)


@app.command(help=HELP)
@_errors
def view(
    root: RootOption = None,
    no_open: Annotated[bool, typer.Option("--no-open", help="Print the link; do not open a browser.")] = False,
    json: JsonOption = False,
) -> None:
    """Open the memory viewer in the default browser and print its link (the help: ``HELP``)."""
    import sys
    import webbrowser

    from memtree.notes.root import find_root
    from memtree.serve.viewer.link import open_link

    opened = open_link(find_root(root).resolve())
    shown = False if no_open else webbrowser.open(opened.url)
    if json:
        _dump(schema.view(opened.url, opened.pid, opened.started))
        return
    how = "started" if opened.started else "running"
    print(printable(f"memtree viewer: {opened.url}"))
    note = f"daemon pid {opened.pid} ({how}); the link works once, within two minutes"
    if not no_open and not shown:
        note += "; no browser could be opened here: open the link yourself"
    sys.stderr.write(printable(note) + "\n")
