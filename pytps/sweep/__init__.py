"""Many runs as one study: sweeps along one or two axes (`cells`: sweep.json, the knee, max
goodput, SLO capacity) and TOML matrices of endpoints × workloads (`matrix`)."""
