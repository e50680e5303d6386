"""Errors a user can fix by changing their input; the CLI prints them as one line and exits 2."""


class UserError(ValueError):
    """Bad input: unknown model or dataset, vocabularies that differ, a prompt too long, ..."""
