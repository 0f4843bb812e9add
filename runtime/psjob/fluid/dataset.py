"""`fluid.DatasetFactory`: Fluid 1.x's way to make a dataset for `exe.train_from_dataset`.

    dataset = fluid.DatasetFactory().create_dataset("InMemoryDataset")  # default "QueueDataset"
    dataset.set_batch_size(32); dataset.set_thread(2); dataset.set_use_var([...])
    dataset.set_pipe_command("python reader.py"); dataset.set_filelist(files)

The datasets are psjob's InMemoryDataset and QueueDataset (paddle.distributed's;
docs/user/paddle2.md "Datasets"), made through the hook the runtime registers: they run
pipe commands and sit above the framework. FileInstantDataset and BoxPSDataset
(Paddle's GPU-box and file-instant feeds) are not there.
"""
from __future__ import annotations

from psjob.foundation import hooks

__all__ = ["DatasetFactory"]


class DatasetFactory:
    def create_dataset(self, datafeed_class="QueueDataset"):
        return hooks.lookup(hooks.DATASET)(datafeed_class)
