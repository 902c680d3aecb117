"""pytest plugin: run the tests with the CPU engine's libraries preloaded, as the ``uxlocal`` CLI runs.

Enabled by ``-p uxlocal._pytest_preload`` in pyproject's ``addopts``. pytest imports ``-p`` plugins
while it parses its options, before it captures output, so re-executing here (the same command,
``sys.orig_argv``) hands the terminal to the new pytest unchanged. ``UXLOCAL_NO_PRELOAD=1`` turns it
off, as it does for the CLI; the embedded-model tests then run as before issue 19.
"""

from uxlocal import settings
from uxlocal.cpu_tuning import reexec_with_preload

reexec_with_preload()
settings.apply_process_defaults()  # as the CLI does: tests import transformers and vLLM directly
