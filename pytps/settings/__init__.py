"""Every setting of a run, spelled once (`table`): the `pytps run` / `pytps sweep` flags, the keys
of a TOML matrix and make_config's keyword arguments all come from it."""
