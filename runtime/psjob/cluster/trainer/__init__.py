"""The trainer side: the communicators that move a trainer's gradients and parameters, geo-SGD,
trainer 0's checkpoints and the trainer's telemetry."""
