"""The heterogeneous parameter server's heter trainers: the device half of a split program."""
