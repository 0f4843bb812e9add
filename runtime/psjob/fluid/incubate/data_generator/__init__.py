"""`paddle.fluid.incubate.data_generator`: the MultiSlot reader side of a dataset's pipe_command."""
from psjob.distributed.fleet.data_generator import DataGenerator, MultiSlotDataGenerator, MultiSlotStringDataGenerator

__all__ = ["MultiSlotDataGenerator", "MultiSlotStringDataGenerator"]
