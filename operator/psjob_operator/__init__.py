"""psjob operator: reconciles ParameterServerJob resources (kopf)."""
