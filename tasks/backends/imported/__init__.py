"""Backends that import environments and scenarios someone else made (a benchmark's), rather
than synthesizing them; what they import passes the same admission and certification."""
