"""tgrad.nn: functional ops, Module and layers."""
