"""Screens of the console: the full console and the step detail."""
