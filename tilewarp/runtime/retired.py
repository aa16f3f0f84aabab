"""Ids of destroyed library objects (a ``wp.Mesh``, ``wp.Bvh``, ``wp.HashGrid``, ``wp.Volume``).

An object's id is the address of its descriptor in device memory; once the object is gone that
memory is freed, and a kernel given the old id would read whatever the allocator puts there next (a
crash on the CPU, garbage hits on the GPU). Objects report their id here when they go (``retire``);
a launch that passes a retired id as a ``uint64`` argument is refused with a ``LaunchError`` naming
the argument (``runtime/packing.py``; the native launch path hands such a launch to that one). An
allocation that reuses the address takes it off the list (``reuse``): from then on the number is
just a number. Only direct ``uint64`` arguments are checked: ids inside structs or arrays are not.
"""
from __future__ import annotations

#: id -> what it was ("wp.Mesh", ...); an insertion-ordered dict, the oldest dropped past _MAX
retired: dict[int, str] = {}
#: the same ids, as the set the native launch path tests (it must stay the same object)
ids: set[int] = set()
_MAX = 1 << 16


def retire(object_id, kind: str) -> None:
    if not object_id:
        return
    object_id = int(object_id)
    retired[object_id] = kind
    ids.add(object_id)
    if len(retired) > _MAX:  # forget the oldest: their addresses have most likely been reused
        oldest = next(iter(retired))
        del retired[oldest]
        ids.discard(oldest)


def reuse(address: int) -> None:
    """An allocation starts at ``address``: it is no longer a destroyed object's id."""
    if address in ids:
        ids.discard(address)
        retired.pop(address, None)


def message(name: str, value: int) -> str | None:
    kind = retired.get(value)
    if kind is None:
        return None
    return (f"argument '{name}' is the id of a {kind} that has been destroyed (its memory is freed): keep "
            f"the {kind} alive while kernels use its id")
