"""Model definitions shared by examples, entrypoints, tests and benchmarks."""
