"""Stubs of the compiled module pytps._core (the .so beside this folder), one file per
register_* concept of csrc/bindings (csrc/bindings/module.cpp calls them), as
boost-histogram's src/boost_histogram/_core/*.pyi.

The compiled module is flat: every name is an attribute of pytps._core itself. The files here
exist for the type checker only (a directory without __init__.py does not shadow the .so, see
tests/test_build.py); import the names from pytps._core (or pytps), never from pytps._core.clock.
"""

from pytps._core.client import (
    TLS_AVAILABLE as TLS_AVAILABLE,
)
from pytps._core.client import (
    TLS_BUNDLED as TLS_BUNDLED,
)
from pytps._core.client import (
    ClientEngine as ClientEngine,
)
from pytps._core.client import (
    ClientResult as ClientResult,
)
from pytps._core.client import (
    measure_read_floor as measure_read_floor,
)
from pytps._core.client import (
    tls_library_version as tls_library_version,
)
from pytps._core.clock import (
    clock_info as clock_info,
)
from pytps._core.clock import (
    now_ns as now_ns,
)
from pytps._core.emulator import (
    Emulator as Emulator,
)
from pytps._core.histogram import (
    Histogram as Histogram,
)
from pytps._core.http import (
    HttpStreamRecorder as HttpStreamRecorder,
)
from pytps._core.io import (
    EVENT_BACKEND as EVENT_BACKEND,
)
from pytps._core.io import (
    EVENT_WAIT as EVENT_WAIT,
)
from pytps._core.io import (
    KERNEL_TIMESTAMPS as KERNEL_TIMESTAMPS,
)
from pytps._core.io import (
    _event_loop_probe as _event_loop_probe,
)
from pytps._core.jsontext import (
    json_body as json_body,
)
from pytps._core.jsontext import (
    json_empty_float_vectors as json_empty_float_vectors,
)
from pytps._core.jsontext import (
    json_float_vector_length as json_float_vector_length,
)
from pytps._core.jsontext import (
    json_line as json_line,
)
from pytps._core.jsontext import (
    json_line_of as json_line_of,
)
from pytps._core.jsontext import (
    json_no_big_float as json_no_big_float,
)
from pytps._core.pacer import (
    FramePacer as FramePacer,
)
from pytps._core.recorder import (
    AUDIO_API_PATHS as AUDIO_API_PATHS,
)
from pytps._core.recorder import (
    BODY_API_PATHS as BODY_API_PATHS,
)
from pytps._core.recorder import (
    DIALECT_PATHS as DIALECT_PATHS,
)
from pytps._core.recorder import (
    DIALECTS as DIALECTS,
)
from pytps._core.recorder import (
    KIND_CONTENT as KIND_CONTENT,
)
from pytps._core.recorder import (
    KIND_REASONING as KIND_REASONING,
)
from pytps._core.recorder import (
    KIND_TOOL as KIND_TOOL,
)
from pytps._core.recorder import (
    StreamRecorder as StreamRecorder,
)
from pytps._core.sse import (
    SSEEvent as SSEEvent,
)
from pytps._core.sse import (
    SSEParser as SSEParser,
)
from pytps._core.words import (
    shuffled_words as shuffled_words,
)
from pytps._core.words import (
    shuffled_words_text as shuffled_words_text,
)

__version__: str
