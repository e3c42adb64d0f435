"""envmill: a data factory for tool-interactive agent-training environments.

The code lives in the top-level folders of the repository (``schemas/``, ``tasks/``,
``warehouse/``, ``flows/``, ``deployments/``); pyproject maps each one under this namespace
(``envmill.tasks`` and so on), so the generic folder names never collide with other packages.
"""

__version__ = "0.1.0"
