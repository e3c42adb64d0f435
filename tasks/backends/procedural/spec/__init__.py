"""The procedural backend's input language: domain specs (``domain``, ``rules``, ``paths``) and
their semantic validation (``check`` and the modules it calls)."""
