"""``<private>…</private>``: text a person marks as never to be kept, cut out before anything is written.

The one home of the rule. A span is cut from its opening tag to its matching closing tag (nested
spans count), or to the end of the text when it is never closed — a forgotten ``</private>`` keeps
more out, never less. Each span becomes :data:`PRIVATE_MARK`, so a log still shows that something
was said. Tags are matched case-insensitively; a closing tag with no opening one is left as text.
"""

from __future__ import annotations

import re

PRIVATE_MARK = "[private]"
_TAG = re.compile(r"<(/?)private\s*>", re.IGNORECASE)


def strip_private(text: str) -> str:
    """``text`` with every ``<private>`` span (see the module docstring) replaced by :data:`PRIVATE_MARK`."""
    if "<" not in text or "private" not in text.lower():
        return text
    out: list[str] = []
    depth = 0
    kept_from = 0
    for tag in _TAG.finditer(text):
        closing = tag.group(1) == "/"
        if not closing:
            if depth == 0:
                out.append(text[kept_from : tag.start()])
                out.append(PRIVATE_MARK)
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                kept_from = tag.end()
    if depth == 0:
        out.append(text[kept_from:])
    return "".join(out)
