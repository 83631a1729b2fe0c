"""The one switch the hot path reads: the active profiler, or None (then nothing is added).

The profiler sets ``ACTIVE`` to an object with ``op_start(op_cls, args) -> handle``,
``op_end(handle)``, ``node_start(node) -> handle`` and ``node_end(handle)``.
"""

ACTIVE = None
