"""The Fleet API's error: a call out of order or for the wrong role."""


class FleetError(RuntimeError):
    pass
