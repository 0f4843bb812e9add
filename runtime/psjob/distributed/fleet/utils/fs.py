"""paddle.distributed.fleet.utils.fs: the file-system clients Fleet jobs move models and data
with (Paddle's LocalFS and HDFSClient, same methods and errors). PaddleRec's online trainer,
for instance, lists its day/pass data folders and writes its donefiles through them.

HDFSClient runs Hadoop's own command line (`<hadoop_home>/bin/hadoop fs -D k=v ... -<cmd>`), as
Paddle's does; a command that fails after its retries raises ExecuteError with its output.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time

__all__ = ["ExecuteError", "FSFileExistsError", "FSFileNotExistsError", "FSTimeOut", "FSShellCmdAborted", "FS",
           "LocalFS", "HDFSClient"]


class ExecuteError(Exception):
    pass


class FSFileExistsError(Exception):
    pass


class FSFileNotExistsError(Exception):
    pass


class FSTimeOut(Exception):
    pass


class FSShellCmdAborted(ExecuteError):
    pass


class FS:
    """The interface both clients implement."""

    def ls_dir(self, fs_path):
        raise NotImplementedError

    def is_file(self, fs_path):
        raise NotImplementedError

    def is_dir(self, fs_path):
        raise NotImplementedError

    def is_exist(self, fs_path):
        raise NotImplementedError

    def upload(self, local_path, fs_path):
        raise NotImplementedError

    def download(self, fs_path, local_path):
        raise NotImplementedError

    def mkdirs(self, fs_path):
        raise NotImplementedError

    def delete(self, fs_path):
        raise NotImplementedError

    def need_upload_download(self):
        raise NotImplementedError

    def rename(self, fs_src_path, fs_dst_path):
        raise NotImplementedError

    def mv(self, fs_src_path, fs_dst_path, overwrite=False, test_exists=False):
        raise NotImplementedError

    def upload_dir(self, local_dir, dest_dir):
        raise NotImplementedError

    def list_dirs(self, fs_path):
        raise NotImplementedError

    def touch(self, fs_path, exist_ok=True):
        raise NotImplementedError

    def cat(self, fs_path=None):
        raise NotImplementedError


class LocalFS(FS):
    """The local file system."""

    def ls_dir(self, fs_path):
        """([subdirectories], [files]) of fs_path; ([], []) when it does not exist."""
        if not self.is_exist(fs_path):
            return [], []
        dirs, files = [], []
        for name in os.listdir(fs_path):
            (dirs if os.path.isdir(os.path.join(fs_path, name)) else files).append(name)
        return dirs, files

    def mkdirs(self, fs_path):
        if os.path.isfile(fs_path):
            raise FSFileExistsError(f"{fs_path} is already a file")
        os.makedirs(fs_path, exist_ok=True)

    def rename(self, fs_src_path, fs_dst_path):
        os.rename(fs_src_path, fs_dst_path)

    def delete(self, fs_path):
        if not self.is_exist(fs_path):
            return
        if os.path.isfile(fs_path) or os.path.islink(fs_path):
            os.remove(fs_path)
        else:
            shutil.rmtree(fs_path)

    def need_upload_download(self):
        return False

    def is_file(self, fs_path):
        return os.path.isfile(fs_path)

    def is_dir(self, fs_path):
        return os.path.isdir(fs_path)

    def is_exist(self, fs_path):
        return os.path.exists(fs_path)

    def touch(self, fs_path, exist_ok=True):
        if self.is_exist(fs_path):
            if exist_ok:
                return
            raise FSFileExistsError(fs_path)
        with open(fs_path, "a"):
            pass

    def mv(self, src_path, dst_path, overwrite=False, test_exists=False):
        if not self.is_exist(src_path):
            raise FSFileNotExistsError(src_path)
        if overwrite and self.is_exist(dst_path):
            self.delete(dst_path)
        if self.is_exist(dst_path):
            raise FSFileExistsError(dst_path)
        self.rename(src_path, dst_path)

    def list_dirs(self, fs_path):
        return self.ls_dir(fs_path)[0]

    def cat(self, fs_path=None):
        with open(fs_path) as f:
            return f.read().rstrip("\n")


class HDFSClient(FS):
    """HDFS through `hadoop fs` (HDFSClient(hadoop_home, configs, time_out ms, sleep_inter ms))."""

    def __init__(self, hadoop_home, configs, time_out=5 * 60 * 1000, sleep_inter=1000):
        self.pre_commands = [os.path.join(os.path.expandvars(hadoop_home), "bin", "hadoop"), "fs"]
        for key, value in (configs or {}).items():
            self.pre_commands += ["-D", f"{key}={value}"]
        self._time_out = time_out / 1000.0
        self._sleep_inter = sleep_inter / 1000.0

    def _run(self, args, retry_times=5, check=True):
        """(exit status, output lines) of `hadoop fs <args>`, retried while it fails."""
        cmd = self.pre_commands + list(args)
        deadline = time.monotonic() + self._time_out
        for attempt in range(max(1, retry_times) + 1):
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self._time_out)
            except FileNotFoundError:
                raise ExecuteError(f"HDFSClient: {cmd[0]} not found (hadoop_home must hold bin/hadoop)") from None
            except subprocess.TimeoutExpired:
                raise FSTimeOut(f"HDFSClient: {' '.join(cmd)} took over {self._time_out:g} s") from None
            if proc.returncode == 0 or not check:
                return proc.returncode, proc.stdout.splitlines()
            if attempt == retry_times or time.monotonic() > deadline:
                break
            time.sleep(self._sleep_inter)
        raise ExecuteError(f"HDFSClient: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")

    def _test(self, flag, fs_path):
        return self._run(["-test", flag, fs_path], retry_times=0, check=False)[0] == 0

    def ls_dir(self, fs_path):
        if not self.is_exist(fs_path):
            return [], []
        dirs, files = [], []
        for line in self._run(["-ls", fs_path])[1]:
            parts = line.split()
            if len(parts) != 8:  # "Found N items" and the like
                continue
            name = os.path.basename(parts[7])
            (dirs if parts[0].startswith("d") else files).append(name)
        return dirs, files

    def list_dirs(self, fs_path):
        return self.ls_dir(fs_path)[0]

    def is_dir(self, fs_path):
        return self._test("-d", fs_path)

    def is_file(self, fs_path):
        return self.is_exist(fs_path) and not self.is_dir(fs_path)

    def is_exist(self, fs_path):
        return self._test("-e", fs_path)

    def upload(self, local_path, fs_path, multi_processes=1, overwrite=False):
        if not os.path.exists(local_path):
            raise FSFileNotExistsError(local_path)
        if self.is_exist(fs_path):
            if not overwrite:
                raise FSFileExistsError(fs_path)
            self.delete(fs_path)
        self._run(["-put", local_path, fs_path])

    def upload_dir(self, local_dir, dest_dir, overwrite=False):
        self.upload(local_dir, dest_dir, overwrite=overwrite)

    def download(self, fs_path, local_path, multi_processes=1, overwrite=False):
        if not self.is_exist(fs_path):
            raise FSFileNotExistsError(fs_path)
        if os.path.exists(local_path):
            if not overwrite:
                raise FSFileExistsError(local_path)
            LocalFS().delete(local_path)
        self._run(["-get", fs_path, local_path])

    def mkdirs(self, fs_path):
        if not self.is_exist(fs_path):
            self._run(["-mkdir", "-p", fs_path])

    def mv(self, fs_src_path, fs_dst_path, overwrite=False, test_exists=True):
        if test_exists:
            if not self.is_exist(fs_src_path):
                raise FSFileNotExistsError(fs_src_path)
            if self.is_exist(fs_dst_path):
                if not overwrite:
                    raise FSFileExistsError(fs_dst_path)
                self.delete(fs_dst_path)
        self._run(["-mv", fs_src_path, fs_dst_path])

    def rename(self, fs_src_path, fs_dst_path):
        self.mv(fs_src_path, fs_dst_path, test_exists=False)

    def delete(self, fs_path):
        if self.is_exist(fs_path):
            self._run(["-rmr" if self.is_dir(fs_path) else "-rm", fs_path])

    def touch(self, fs_path, exist_ok=True):
        if self.is_exist(fs_path):
            if exist_ok:
                return
            raise FSFileExistsError(fs_path)
        self._run(["-touchz", fs_path])

    def need_upload_download(self):
        return True

    def cat(self, fs_path=None):
        if not self.is_file(fs_path):
            return ""
        return "\n".join(self._run(["-cat", fs_path])[1])
