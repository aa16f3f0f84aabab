"""Tile planning, between autodiff and the emitter: which values vary between a block's lanes
(``lanes.py``), where each tile lives and the shared-memory plan (``storage.py``), loads issued ahead
(``prefetch.py``), combined atomics (``combine.py``) and streaming reads (``streaming.py``)."""
