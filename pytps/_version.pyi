# The version the build writes into pytps/_version.py (pyproject.toml); a stub for type checkers
# reading this source tree, where that file is not.
__version__: str
