"""One LoRA trainer for every suite: token ids plus a loss mask in, a hashed peft adapter out.

PALATE's per-user simulators and ``uxlocal judge train`` both train through this package, so
batching, the schedule, seeding and adapter saving are written once. See ``README.md``.
"""
