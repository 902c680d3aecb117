"""Built-in report sections, one module per suite; each registers with ``uxlocal.report.registry``."""
