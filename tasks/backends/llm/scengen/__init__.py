"""ScenGenerator (issue 12): scenarios for an admitted environment from an LLM — an initial
state, a task with the tool calls that fulfil it (run as written), a checklist of checks —
certified with every gate, and repaired from the gate that refused them (``build``).

The package imports nothing itself: SkelBuilder's state checks use its reference check, and
``build`` uses SkelBuilder's."""
