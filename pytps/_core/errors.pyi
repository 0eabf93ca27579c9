"""Stubs of what csrc/bindings/register_errors.cpp adds to pytps._core: no names. It translates
the core's protocol errors into pytps.errors.ProtocolError, the Python class they are raised as."""
