"""The on-disk formats of a memory, each behind the ``MemoryFormat`` protocol (``base``).

``native`` is our own versioned directory; ``memdreamer`` is MemDreamer's layout (a package of
its own); ``registry`` lists them in the order ``open_memory`` tries them.
"""
