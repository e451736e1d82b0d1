"""Text: normalization, index terms, Korean/English forms, the one matching rule, and dates.

Pure functions of strings (no I/O, no clock). May import nothing of memtree.
"""
