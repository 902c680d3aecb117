"""``uxlocal judge``: judge scoring of any conversations file, with agreement against human labels."""
