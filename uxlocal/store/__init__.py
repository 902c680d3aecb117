"""The DuckDB store: migrations, metric views, and the one buffered writer."""

from uxlocal.store.db import connect, migrate
from uxlocal.store.writer import StoreWriter

__all__ = ["StoreWriter", "connect", "migrate"]
