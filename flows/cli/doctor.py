"""``envmill doctor``: what this machine grants a run (isolation layers, Prefect API, versions)."""

from __future__ import annotations

from envmill.flows.cli.support import print_json


def doctor() -> None:
    """Print the sandbox isolation in force, the Prefect API a run would use, and versions."""
    from envmill.flows.run_record import package_versions
    from envmill.flows.runtime.prefect_api import configured_api_url
    from envmill.schemas.settings import load_settings
    from envmill.tasks.sandbox import Sandbox
    from envmill.tasks.sandbox.isolation import IsolationLevel

    settings = load_settings()
    with Sandbox(settings.sandbox) as box:
        level: IsolationLevel = box.level
        with box.episode(
            "class Probe:\n    def __init__(self):\n        self.ok = True\n", "Probe"
        ) as ep:
            host_works = ep.loaded
    print_json(
        {
            "isolation": level.describe(),
            "layers": {
                "namespaces": level.namespaces,
                "chroot": level.chroot,
                "uid_per_host": level.drop_uid,
            },
            "fallbacks": [
                name
                for name, on in (
                    ("no network/pid namespace", level.namespaces),
                    ("no chroot", level.chroot),
                    ("no uid per host", level.drop_uid),
                )
                if not on
            ],
            "warnings": isolation_warnings(level),
            "sandbox_host_starts": host_works,
            "limits": settings.sandbox.model_dump(),
            "prefect_api": configured_api_url() or "embedded loopback server, started per run",
            "versions": package_versions(),
        }
    )


def isolation_warnings(level) -> list[str]:
    """What a degraded isolation level leaves open, in plain words (from the red-team suite)."""
    warnings = []
    if not (level.chroot and level.drop_uid):
        warnings.append(
            "no chroot or uid per host: a hostile program can read what the factory's user "
            "can read "
            "(files, /proc/<pid>/environ of its processes, so API keys) and signal its processes; "
            "this is not a security boundary; run as root where unshare works for full isolation"
        )
    if not level.namespaces:
        warnings.append(
            "no network, IPC or mount namespace: a hostile program can open network "
            "connections and System V IPC objects the machine shares"
        )
    if not level.seccomp:
        warnings.append(
            "no seccomp filter (pyseccomp or libseccomp missing, or isolation=basic): a program "
            "that reaches native code can start programs, use IPC and keyrings, and open "
            "sockets to other hosts"
        )
    return warnings
