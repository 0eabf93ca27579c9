"""Reports read only saved results (results.json), so a live run and `pytps report DIR` agree."""
