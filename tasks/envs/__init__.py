"""Environment modules (DESIGN §3.1): what the factory reads off a module's source (``reading``,
``annotations``, ``tool_kinds``), the state contract checked on it (``contract``, with
``state_writes`` and ``state_values``) and by probe calls in the sandbox (``probes``, with
``probe_args`` and ``probe_state``), and the admission that turns a source into an environment
the rest of the pipeline can run (``admission``)."""

from envmill.tasks.envs.admission import (
    AdmittedEnvironment,
    EnvironmentRejected,
    admit_environment,
)
from envmill.tasks.envs.reading import compute_env_id

__all__ = ["AdmittedEnvironment", "EnvironmentRejected", "admit_environment", "compute_env_id"]
