"""Checkpoints of distributed jobs: loading slices into pservers, (later) coordinated saves."""
