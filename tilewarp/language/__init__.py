"""The kernel language every stage reads: its types (``types.py``, also ``tilewarp.types``), generic
annotations and their matching (``generics.py``), ``@wp.struct`` (``structs.py``), the names of generated
C++ (``names.py``) and Python-side arithmetic on kernel values (``host_arith.py``). The builtin table,
the language's functions, is ``tilewarp/builtins``."""
