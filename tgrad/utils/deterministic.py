"""``tgrad.utils.deterministic`` (PyTorch's ``torch.utils.deterministic``).

``fill_uninitialized_memory`` (default True): while ``tgrad.use_deterministic_algorithms(True)``
is on, ``empty``, ``empty_like``, ``empty_strided`` and ``new_empty`` fill their result with NaN
(floating point and complex), the dtype's largest value (integers) or True (bool), as
PyTorch's do, so code that reads memory it never wrote gives the same values every run.
Set it to False to keep those results uninitialised."""

fill_uninitialized_memory: bool = True
