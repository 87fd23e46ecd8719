"""Modal dialogs: action form, confirmation, help."""
