"""The application layer: what the CLI, the library (pytps.run, pytps.sweep, ...) and the scale
driver call. Each job is a function with typed settings: a run (`runs`), a sweep (`sweeps`), a
capacity search (`search`), a TOML matrix (`matrix`); `exit_codes` says what a finished job's
status is. The CLI parses flags into these settings, makes one call, and prints."""
