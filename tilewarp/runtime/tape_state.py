"""The Tape ``wp.launch`` records into while one is active (one at a time, as in Warp)."""
active = None
#: set once any Tape starts recording: from then on launches keep array versions up to date
tracking = False


_array = None  # the array class (imported on first use: array imports this module)


def arrays_in(value):
    """The arrays a launch argument holds: itself, or the array fields of a struct (recursively).
    (A tuple or list, not a generator: launches under a Tape call this for every argument.)"""
    global _array
    if _array is None:
        from .array import array as _array
    if isinstance(value, _array):
        return (value,)
    fields = getattr(type(value), "_tw_fields_", None)
    if not fields:
        return ()
    out = []
    for name in fields:
        out.extend(arrays_in(getattr(value, name, None)))
    return out
