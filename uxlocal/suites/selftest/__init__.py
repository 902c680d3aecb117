"""``uxlocal run selftest``: a tiny suite that exercises every role and the store.

It registers through the ``uxlocal.suites`` entry point like any other suite.
"""
