"""The errors a run ends with on purpose; the CLI prints each as one line and exits 2."""


class UserError(ValueError):
    """Bad input: unknown model or dataset, vocabularies that differ, a prompt too long, ..."""


class Fault(RuntimeError):
    """A run ended by a fault, not by its input: a worker died, stalled or never answered.

    str(fault) is one line for the terminal (the CLI prints it as `error: ...` and exits 2);
    `details` is the long story (every rank's traceback) for the run's log."""

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.details = details
