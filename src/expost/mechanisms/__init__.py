"""Mechanisms: each a frozen description with ``guarantee()``, ``loss(distance)`` and ``run``."""
