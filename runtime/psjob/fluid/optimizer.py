"""fluid.optimizer — being written (in progress this session)."""
