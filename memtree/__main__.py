"""`python -m memtree`."""

from memtree.entry import main

main()
