"""Packages are discovered, never listed: every folder with an ``__init__.py`` under the
top-level folders ships, each under the ``envmill`` namespace (``tasks/backends`` installs as
``envmill.tasks.backends``), so the generic folder names never collide with a user's packages.
Everything else about the distribution is in ``pyproject.toml``."""

from setuptools import find_packages, setup

ROOTS = ("schemas", "tasks", "warehouse", "flows", "deployments")


def discovered() -> tuple[list[str], dict[str, str]]:
    packages = ["envmill"]
    package_dir = {"envmill": "envmill"}
    for root in ROOTS:
        package_dir[f"envmill.{root}"] = root
        packages.append(f"envmill.{root}")
        packages += [f"envmill.{root}.{name}" for name in find_packages(where=root)]
    return packages, package_dir


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import discovered()
    packages, package_dir = discovered()
    setup(packages=packages, package_dir=package_dir)
