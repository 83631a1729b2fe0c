"""Triton kernels (forward and backward side by side)."""
