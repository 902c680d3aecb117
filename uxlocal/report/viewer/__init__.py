"""Local web viewer for the trajectories in a store (``uxlocal view``); see ``app.py``."""

from uxlocal.report.viewer.app import HOST, create_app, serve

__all__ = ["HOST", "create_app", "serve"]
