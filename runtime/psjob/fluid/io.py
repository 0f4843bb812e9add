"""fluid.io — being written (in progress this session)."""
