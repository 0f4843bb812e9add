"""Parameter-server runtime: the pserver process, the trainer communicator, auth."""
