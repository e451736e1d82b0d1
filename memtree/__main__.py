"""`python -m memtree`."""

from memtree.cli import main

main()
