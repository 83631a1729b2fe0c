"""CPU primitives of the nn ops (softmax family, cross_entropy, layer_norm, dropout...).

Re-exported by ``tgrad.backends.numpy`` so the backend's primitive table stays one module.
"""

from __future__ import annotations

import numpy as np  # noqa: F401
