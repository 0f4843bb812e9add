"""fluid.metrics — being written (in progress this session)."""
