"""Every error a person can cause or meet, under one base class.

The CLI turns any `WorkbenchError` into one line on stderr and exit code 2; the UI shows it in a
message box. Anything else reaching the top is a bug and keeps its traceback. A message names
what was wrong and what to do, never a repr of a huge value.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base of every expected failure; `str(err)` is the one line shown to the user."""


class NotFound(WorkbenchError):
    """A session, world, incident, rule version or file that does not exist."""


class ConfigError(WorkbenchError):
    """workbench.yaml or an environment variable holds something unusable."""


class RulesError(WorkbenchError):
    """A rules directory or rules YAML text that does not validate."""


class BundleError(WorkbenchError):
    """A session bundle that cannot be read or does not match the bundle schema."""


class BackendError(WorkbenchError):
    """An evidence backend (Prometheus, Loki, log files, runbooks) failed or is misconfigured."""


class StoreError(WorkbenchError):
    """The database cannot be opened, migrated, read or written."""


class LlmCallError(WorkbenchError):
    """An LLM call failed for good (after its retries)."""


class InputError(WorkbenchError):
    """A question or argument that cannot be used as given."""
