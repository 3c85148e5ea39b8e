"""The web inspector: ``langgraph-durable-mongodb ui`` serves the thread list and each thread's page.

``guard`` (who may ask: loopback or a token, CSRF on writes), ``app`` (the Starlette routes: HTML pages and
the same data as JSON under ``/api``), ``actions`` (resolve, discard, delete: the CLI's commands) and
``server`` (uvicorn). It needs the ``ui`` extra (``pip install 'langgraph-durable-mongodb[ui]'``):
``missing_extra`` names what is not installed, before anything of it is imported.
"""

from __future__ import annotations

import importlib.util

#: The distributions the ``ui`` extra installs, by the module each provides.
EXTRA = {"starlette": "starlette", "uvicorn": "uvicorn", "jinja2": "jinja2"}


def missing_extra() -> list[str]:
    """The modules of the ``ui`` extra that cannot be imported here.

    Returns:
        Their names, sorted; empty when the extra is installed.
    """
    return sorted(name for name, module in EXTRA.items() if importlib.util.find_spec(module) is None)
