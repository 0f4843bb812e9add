"""Unit tier: pure functions and in-process objects only.

Real: the framework, kernels (numpy), planners, builders. Faked: nothing —
these tests start no processes and open no sockets.
"""
