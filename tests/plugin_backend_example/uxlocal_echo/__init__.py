"""An example uxlocal engine backend (docs/write-a-backend.md)."""
