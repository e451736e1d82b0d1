"""Long-lived processes over one memory root: the watcher.

May import: everything below (api, schema and the layers under them).
"""
