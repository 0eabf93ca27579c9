"""Graded answers (docs/grading.md): `grade` (`Grade`: a grader's verdict on one answer),
`answers` (the named extraction rules), `graders` (references checked before the run, the
built-in graders, a user's `module:function`). Below `measure/`: it reads a finished request
through the `Answered` protocol, never the record model itself."""

#: --grader-timeout-s's default: the most one answer's grading may take (here, where the table of
#: settings reads it without loading the graders).
DEFAULT_GRADER_TIMEOUT_S = 30.0
