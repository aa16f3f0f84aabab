"""``Tape.visualize()``: the recorded computation as GraphViz DOT source.

Launches are boxes, arrays are ellipses (labelled with the kernel argument names they were passed
as); an edge runs from each array a launch reads to the launch and from the launch to each array it
writes. Scopes (``record_scope_begin/end``) become clusters. With ``simplify_graph`` a run of
identical launches (same kernel, same arrays), or of an identical group of launches, is drawn once
and marked "repeated Nx", which keeps the graph of an unrolled loop readable.
"""
from __future__ import annotations

from ..language import types as T
from ..runtime import tape_state


def _quote(text) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _kernel_name(entry) -> str:
    kernel = getattr(entry, "kernel", None)
    if kernel is None:
        fn = getattr(entry, "backward", None)
        return f"host function {getattr(fn, '__name__', '')}".strip()
    return str(getattr(kernel, "key", None) or getattr(kernel, "__name__", "kernel"))


def _arguments(entry):
    """(argument name, array, written) for every array a recorded entry touches."""
    names = list(getattr(getattr(entry, "kernel", None), "arg_names", []) or [])
    if hasattr(entry, "inputs"):
        values = [(v, False) for v in entry.inputs] + [(v, True) for v in entry.outputs]
    else:  # a host step (record_func, copies): its arrays, read and written
        values = [(v, True) for v in getattr(entry, "arrays", [])]
    out = []
    for k, (v, written) in enumerate(values):
        name = names[k] if k < len(names) else ""  # a host step's arrays have no parameter names
        if T.is_struct(type(v)):
            for field in type(v)._tw_fields_:
                for a in tape_state.arrays_in(getattr(v, field, None)):
                    out.append((f"{name}.{field}", a, written))
        else:
            out.extend((name, a, written) for a in tape_state.arrays_in(v))
    return out


def _signature(entry):
    return _kernel_name(entry), tuple((id(a), w) for _, a, w in _arguments(entry))


def _collapse(items):
    """Runs of repeated groups in ``items`` (entries): [(group of entries, repeat count)]."""
    sigs = [_signature(e) for e in items]
    out, i, n = [], 0, len(items)
    while i < n:
        best = (1, 1)  # (group length, repeats)
        for length in range(1, (n - i) // 2 + 1):
            reps = 1
            while i + (reps + 1) * length <= n and \
                    sigs[i + reps * length:i + (reps + 1) * length] == sigs[i:i + length]:
                reps += 1
            if reps > 1 and reps * length > best[0] * best[1]:
                best = (length, reps)
        length, reps = best
        out.append((items[i:i + length], reps))
        i += length * reps
    return out


class _Writer:
    """Accumulates the DOT lines of one tape: launches (inside clusters), then arrays and edges."""

    def __init__(self, hide_readonly_arrays, written, tracked):
        self.hide_readonly, self.written, self.tracked = hide_readonly_arrays, written, tracked
        self.lines, self.edges, self.arrays, self.launches = [], [], {}, 0

    def array_node(self, a, name):
        names = self.arrays.setdefault(id(a), (a, []))[1]
        if name and name not in names:
            names.append(name)
        return f"a{list(self.arrays).index(id(a))}"

    def group(self, group, reps, indent):
        pad = "  " * indent
        if len(group) == 1:
            self.launch(group[0], reps, indent)
            return
        self.lines.append(f"{pad}subgraph cluster_r{self.launches} {{")
        self.lines.append(f"{pad}  label={_quote(f'repeated {reps}x')}; style=dashed;")
        for e in group:
            self.launch(e, 1, indent + 1)
        self.lines.append(f"{pad}}}")

    def launch(self, entry, reps, indent):
        node = f"k{self.launches}"
        self.launches += 1
        label = _kernel_name(entry) + (f" (repeated {reps}x)" if reps > 1 else "")
        dim = getattr(entry, "dim", None)
        tip = f"dim={dim}" if dim is not None else "host step"
        self.lines.append(f"{'  ' * indent}{node} [shape=box, style=filled, fillcolor=lightblue, "
                          f"label={_quote(label)}, tooltip={_quote(tip)}];")
        for name, a, w in _arguments(entry):
            if self.hide_readonly and id(a) not in self.written and id(a) not in self.tracked:
                continue
            an = self.array_node(a, name)
            self.edges.append(f"  {node} -> {an};" if w else f"  {an} -> {node};")

    def array_lines(self, labels, longest):
        for key, (a, names) in self.arrays.items():
            n = list(self.arrays).index(key)
            label = labels.get(key) or (f"array {n}" if not names else max(names, key=len) if longest else names[0])
            tip = f"array: dtype={T.type_name(a.dtype)}, shape={a.shape}, device={a.device}"
            style = ", style=bold" if key in self.tracked else ""
            yield (f"  a{n} [shape=ellipse, label={_quote(label)}, "
                   f"tooltip={_quote(tip)}{style}];")


def _labels(array_labels, track_inputs, track_outputs, track_input_names, track_output_names):
    labels = {id(a): str(name) for a, name in array_labels.items()} if isinstance(array_labels, dict) else {}
    for arrays, names in ((track_inputs, track_input_names), (track_outputs, track_output_names)):
        for k, a in enumerate(arrays):
            labels[id(a)] = str(names[k]) if k < len(names) else labels.get(id(a), f"tracked {k}")
    return labels


def tape_to_dot(tape, simplify_graph=True, hide_readonly_arrays=False, array_labels=None,
                choose_longest_node_name=True, ignore_graph_scopes=False, track_inputs=(), track_outputs=(),
                track_input_names=(), track_output_names=(), graph_direction="LR") -> str:
    labels = _labels(array_labels, track_inputs, track_outputs, track_input_names, track_output_names)
    entries = list(tape.launches)
    written = {id(a) for e in entries for _, a, w in _arguments(e) if w}
    out = _Writer(hide_readonly_arrays, written, {id(a) for a in [*track_inputs, *track_outputs]})
    out.lines += ["digraph tape {", f"  rankdir={graph_direction};", '  node [fontname="Helvetica"];']
    pos, depth = 0, 1

    def flush(upto):
        nonlocal pos
        segment = entries[pos:upto]
        for group, reps in (_collapse(segment) if simplify_graph else [([e], 1) for e in segment]):
            out.group(group, reps, depth)
        pos = max(pos, upto)

    markers = [] if ignore_graph_scopes else list(tape.scopes)
    for k, (index, name, _meta) in enumerate(markers):
        flush(min(index, len(entries)))
        if name is not None:  # a scope opens: a cluster (runs never cross its borders)
            out.lines += [f"{'  ' * depth}subgraph cluster_s{k} {{", f"{'  ' * depth}  label={_quote(name)}; "
                                                                      f"style=rounded;"]
            depth += 1
        elif depth > 1:
            depth -= 1
            out.lines.append(f"{'  ' * depth}}}")
    flush(len(entries))
    while depth > 1:  # scopes still open when visualize() was called
        depth -= 1
        out.lines.append(f"{'  ' * depth}}}")
    out.lines += [*out.array_lines(labels, choose_longest_node_name), *dict.fromkeys(out.edges), "}"]
    return "\n".join(out.lines) + "\n"
