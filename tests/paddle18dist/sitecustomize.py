"""On the PYTHONPATH of the runs tests/component/test_paddle18_dist_programs.py starts, psjob's
and Paddle 1.8.5's alike, and nowhere else. Paddle's own test programs fetch their data with
`paddle.dataset.common.download(url, module_name, md5, save_name=None)` into
`paddle.dataset.common.DATA_HOME`; there is no internet here and no synthetic file can match
their md5. So, in that module:
- DATA_HOME is PADDLE18_DATA_HOME (the test's temporary folder, filled beforehand in the
  layout download leaves: DATA_HOME/<module_name>/<file name>);
- download() of a URL listed in PADDLE18_TEST_URLS (comma-separated) returns the file
  already there without checking its md5; every other call goes to the real download.

The module is patched when the program imports it (an import hook), not here: importing
paddle while `site` runs hangs Paddle 1.8.5. Under `psjob as-paddle` the module is
psjob.dataset.common (`import paddle` imports it under that name)."""
import importlib.util
import os
import sys

_HOME = os.environ.get("PADDLE18_DATA_HOME", "")
_URLS = set(url for url in os.environ.get("PADDLE18_TEST_URLS", "").split(",") if url)
_NAMES = ("paddle.dataset.common", "psjob.dataset.common")


def _patch(module):
    real = module.download
    if getattr(real, "patched_for_tests", False):
        return
    module.DATA_HOME = _HOME

    def download(url, module_name, md5sum, save_name=None):
        if url not in _URLS:
            return real(url, module_name, md5sum, save_name)
        path = os.path.join(module.DATA_HOME, module_name, save_name or url.split("/")[-1])
        if not os.path.exists(path):
            raise RuntimeError("test data for %s is missing: %s" % (url, path))
        return path

    download.patched_for_tests = True
    module.download = download


class _Hook:
    def find_spec(self, name, path=None, target=None):
        if name not in _NAMES:
            return None
        sys.meta_path.remove(self)  # let the real finders answer
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if _HOME:
    sys.meta_path.insert(0, _Hook())
