"""Runnable examples (python -m psjob.examples.NAME)."""
