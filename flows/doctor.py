"""``envmill doctor``: what this machine grants a run (isolation layers, Prefect API, versions)."""

from __future__ import annotations

import platform
from importlib.metadata import version

from envmill.flows.cli_support import print_json


def doctor() -> None:
    """Print the sandbox isolation in force, the Prefect API a run would use, and versions."""
    from envmill.flows.prefect_api import configured_api_url
    from envmill.flows.run_command import PACKAGES
    from envmill.schemas.settings import load_settings
    from envmill.tasks.sandbox import Sandbox
    from envmill.tasks.sandbox.isolation import IsolationLevel

    settings = load_settings()
    with Sandbox(settings.sandbox) as box:
        level: IsolationLevel = box.level
        with box.episode("class Probe:\n    def __init__(self):\n        self.ok = True\n", "Probe") as ep:
            host_works = ep.loaded
    print_json(
        {
            "isolation": level.describe(),
            "layers": {"namespaces": level.namespaces, "chroot": level.chroot, "uid_per_host": level.drop_uid},
            "fallbacks": [name for name, on in (("no network/pid namespace", level.namespaces),
                                                ("no chroot", level.chroot), ("no uid per host", level.drop_uid))
                          if not on],
            "sandbox_host_starts": host_works,
            "limits": settings.sandbox.model_dump(),
            "prefect_api": configured_api_url() or "embedded loopback server, started per run",
            "python": platform.python_version(),
            "versions": {p: version(p) for p in PACKAGES},
        }
    )
