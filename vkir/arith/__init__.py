"""Arithmetic analysis: constant bounds and modular sets (placeholder until it lands)."""
