"""Red-team suite: hostile programs run straight against the sandbox process boundary."""
