"""`paddle.reader`: reader decorators.

A *reader* is a zero-argument callable returning a fresh iterator of samples;
every decorator here takes readers and returns a new reader, so nothing is read
until the returned reader is called (except `cache`, which reads eagerly, as
Paddle's does).
"""
from psjob.reader.decorator import (
    ComposeNotAligned,
    buffered,
    cache,
    chain,
    compose,
    firstn,
    map_readers,
    shuffle,
    xmap_readers,
)

__all__ = [
    "ComposeNotAligned", "buffered", "cache", "chain", "compose", "firstn",
    "map_readers", "shuffle", "xmap_readers",
]
