"""The results folder: the journal and results.json (`folder`), the binary event log beside the
journal (`event_log`), a journal line as attributes (`record`), and reading a saved folder back."""
