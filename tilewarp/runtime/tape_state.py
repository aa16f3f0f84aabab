"""The Tape ``wp.launch`` records into while one is active (one at a time, as in Warp)."""
active = None
#: set once any Tape starts recording: from then on launches keep array versions up to date
tracking = False


def arrays_in(value):
    """The arrays a launch argument holds: itself, or the array fields of a struct (recursively)."""
    from .array import array

    if isinstance(value, array):
        yield value
        return
    fields = getattr(type(value), "_tw_fields_", None)
    for name in fields or ():
        yield from arrays_in(getattr(value, name, None))
