"""The cross-run results store (docs/history.md): `store` (`Store`: one row per run with its
figures, the schema's versions), `backends` (SQLite and PostgreSQL behind one small interface),
`fingerprint` (which runs are comparable), and the two ways a row is written: `run_entry` (a
finished run's folder) and `calibration_entry` (a calibration's figures)."""
