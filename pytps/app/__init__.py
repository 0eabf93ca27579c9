"""The application layer: what a command does, apart from how its flags are read (the CLI) and
how its figures are computed (report/, measure/). `rank` is `pytps rank` and `pytps.rank()`."""
