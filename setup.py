"""The one piece of packaging pyproject.toml cannot say: how the `memtree` command is installed.

On POSIX systems it is bin/memtree, a plain script (pip rewrites its ``#!python`` line to the
environment's interpreter): it starts ~10 ms sooner than the console script pip generates, whose
``import re`` a call forwarded to the daemon would otherwise spend most of its time on (bin/memtree
says why). On Windows, where a script needs pip's ``.exe`` launcher, it is that console script.
A wheel is built for the system it is built on: a POSIX wheel on Windows lacks the ``.exe`` (install
from source there, or run ``python -m memtree``).
"""

import sys

from setuptools import setup

if sys.platform == "win32":
    setup(entry_points={"console_scripts": ["memtree = memtree.cli.entry:main"]})
else:
    setup(scripts=["bin/memtree"])
