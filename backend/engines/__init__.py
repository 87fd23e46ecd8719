"""Interchangeable engines behind the facade: native, cooperative, simulated."""
