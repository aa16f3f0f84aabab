"""Block programs: kernels written for one block, with the blocks described apart from the body.

``tilewarp.pallas`` (grids and BlockSpecs) and ``tilewarp.arrange`` (arranged tensors) both lower
onto ordinary tile kernels here: ``refs`` (an operand's block as kernel code), ``index_expr``
(index maps traced into expressions), ``program`` (the generated kernel), ``tune`` (meta-parameters).
"""
