"""The Tape ``wp.launch`` records into while one is active (one at a time, as in Warp)."""
active = None
