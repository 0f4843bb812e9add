"""Runnable examples (python -m psjob.cli.examples.NAME)."""
