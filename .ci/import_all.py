"""Import every module of the installed envmill, as a user's install would (CI's wheel check).

Run from outside the checkout with the venv's python, so nothing is imported from the source
tree. The sandbox's host-side modules are loaded by the zygote from their own folder
(``tasks/sandbox/zygote.py`` puts it on ``sys.path``); they are imported the same way here.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

ROOTS = ("schemas", "tasks", "warehouse", "flows", "deployments")


def module_names() -> list[str]:
    names = ["envmill", "envmill.rl"]
    for root in ROOTS:
        package = importlib.import_module(f"envmill.{root}")
        names.append(package.__name__)
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [name for name in names if not name.endswith("__main__")]


def main() -> int:
    import envmill

    if "site-packages" not in envmill.__file__:
        print(f"envmill imported from {envmill.__file__}, not from an installed wheel")
        return 1
    sandbox = importlib.import_module("envmill.tasks.sandbox")
    sys.path.append(str(Path(sandbox.__file__).parent))
    failed = []
    names = module_names()
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # every failure is reported, not only the first
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    print(f"imported {len(names) - len(failed)} of {len(names)} modules from {envmill.__file__}")
    print("\n".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
