"""The pserver side: a transpiled pserver program's state and the process that serves it."""
