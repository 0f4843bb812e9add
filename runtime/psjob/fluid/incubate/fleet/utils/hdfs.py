"""Fluid 1.8's `paddle.fluid.incubate.fleet.utils.hdfs.HDFSClient`: its method names,
argument order (the HDFS path first) and return values, over the `hadoop fs` client of
paddle.distributed.fleet.utils (psjob.distributed.fleet.utils.fs.HDFSClient).

Reference: the PaddlePaddle 1.8 API docs, `fluid.incubate.fleet.utils.hdfs.HDFSClient`.
"""
from __future__ import annotations

import fnmatch
import os

from psjob.distributed.fleet.utils import fs as _fs


class HDFSClient:
    """HDFSClient(hadoop_home, configs): `configs` are `-D` options, e.g.
    {"fs.default.name": "hdfs://...", "hadoop.job.ugi": "user,passwd"}."""

    def __init__(self, hadoop_home, configs):
        self._fs = _fs.HDFSClient(hadoop_home, configs)

    def is_exist(self, hdfs_path=None):
        return self._fs.is_exist(hdfs_path)

    def is_dir(self, hdfs_path=None):
        return self._fs.is_dir(hdfs_path)

    def is_file(self, hdfs_path=None):
        return self._fs.is_file(hdfs_path)

    def ls(self, hdfs_path):
        """The full paths in `hdfs_path` (`hadoop fs -ls`); [] when it does not exist."""
        if not self.is_exist(hdfs_path):
            return []
        return [line.split()[7] for line in self._fs._run(["-ls", hdfs_path], retry_times=10)[1]
                if len(line.split()) == 8]

    def lsr(self, hdfs_path, excludes=()):
        """The full paths of the files under `hdfs_path`, recursively, leaving out those
        matching a glob in `excludes`."""
        if not self.is_exist(hdfs_path):
            return []
        files = []
        for line in self._fs._run(["-lsr", hdfs_path], retry_times=10)[1]:
            parts = line.split()
            if len(parts) != 8 or parts[0].startswith("d"):
                continue
            if not any(fnmatch.fnmatch(parts[7], pattern) for pattern in excludes):
                files.append(parts[7])
        return files

    def makedirs(self, hdfs_path):
        self._fs.mkdirs(hdfs_path)
        return True

    @staticmethod
    def make_local_dirs(local_path):
        os.makedirs(local_path, exist_ok=True)

    def delete(self, hdfs_path):
        """True when `hdfs_path` is gone (also when it was never there)."""
        self._fs.delete(hdfs_path)
        return True

    def rename(self, hdfs_src_path, hdfs_dst_path, overwrite=False):
        self._fs.mv(hdfs_src_path, hdfs_dst_path, overwrite=overwrite)
        return True

    def upload(self, hdfs_path, local_path, multi_processes=5, overwrite=False, retry_times=5):
        """Copy `local_path` to `hdfs_path`; False (as Fluid 1.8) when the local path is
        missing or the remote one exists and `overwrite` is False."""
        try:
            self._fs.upload(local_path, hdfs_path, overwrite=overwrite)
        except (_fs.FSFileExistsError, _fs.FSFileNotExistsError):
            return False
        return True

    def upload_dir(self, dest_dir, local_dir, overwrite=False):
        return self.upload(dest_dir, local_dir, overwrite=overwrite)

    def download(self, hdfs_path, local_path, multi_processes=5, overwrite=False, retry_times=5):
        """Copy `hdfs_path` to `local_path`; False when the remote path is missing or the
        local one exists and `overwrite` is False."""
        try:
            self._fs.download(hdfs_path, local_path, overwrite=overwrite)
        except (_fs.FSFileExistsError, _fs.FSFileNotExistsError):
            return False
        return True

    def cat(self, hdfs_path=None):
        return self._fs.cat(hdfs_path)

    @staticmethod
    def split_files(files, trainer_id, trainers):
        """This trainer's contiguous share of `files`: the first len(files) % trainers
        trainers take one more."""
        per, extra = divmod(len(files), trainers)
        begin = trainer_id * per + min(trainer_id, extra)
        return files[begin:begin + per + (1 if trainer_id < extra else 0)]
