"""``tilewarp.types``, Warp's ``warp.types``: the language layer's type system
(``tilewarp/language/types.py``) under the path Warp scripts import. One module under both names,
so ``tilewarp.types.vec3 is tilewarp.language.types.vec3`` and type identities never split."""
import sys

from .language import types as _types

sys.modules[__name__] = _types
