"""envmill: a data factory for tool-interactive agent-training environments.

The code lives in the top-level folders of the repository (``schemas/``, ``tasks/``, ``warehouse/``,
``flows/``, ``deployments/``); pyproject maps each one under this namespace (``envmill.tasks`` and so
on), so the generic folder names never collide with other packages in a user's environment.
This module stays import-light on purpose: the sandbox worker imports through it.
"""

__version__ = "0.1.0"
