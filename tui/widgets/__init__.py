"""Widgets of the console: header, keyed tables, step detail."""
