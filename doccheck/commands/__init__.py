"""The ``doccheck`` commands, one module each (``run``, ``collect``, ``demo``, ``purge``, ``services``).

Each command turns flags into the options model and hands the run to the library's steps or, when a
Prefect server is there to watch, to the flow (imported inside the function that runs it, so that
``doccheck --help`` imports no Prefect). ``_runner`` holds what they share: progress, exit codes.
"""
