"""`python -m memtree`."""

from memtree.cli.entry import main

main()
