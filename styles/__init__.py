"""Textual CSS shipped inside the wheel; located at run time with importlib.resources."""
