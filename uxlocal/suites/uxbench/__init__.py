"""UXBench suite: T1 judge, T2 eval and T3 recovery over the released files or our samples.

``data`` loads items, ``prompts`` renders requests, ``metrics`` is the Python reference for the
SQL views. See README.md for the map.
"""
