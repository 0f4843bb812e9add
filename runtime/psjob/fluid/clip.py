"""fluid.clip — being written (in progress this session)."""
