"""gRPC data plane between trainers and parameter servers (see psjob.proto)."""
