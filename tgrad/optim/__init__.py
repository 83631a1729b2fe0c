"""tgrad.optim: SGD, Adam, AdamW."""
