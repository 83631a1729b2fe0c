"""The modules behind ``tgrad.utils.benchmark``, laid out as torch.utils.benchmark.utils
(``common``: TaskSpec, Measurement; ``timer``: Timer; ``compare``: Compare)."""
