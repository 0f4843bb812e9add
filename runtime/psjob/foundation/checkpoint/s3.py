"""Checkpoints on S3-compatible object storage: `s3://BUCKET/PREFIX`.

The `Storage` (backend.py) on a bucket, through psjob's own small client
(s3client.py: standard library, SigV4, configured by the standard AWS_*
variables). Not boto3: botocore requires python-dateutil<3, which cannot be
installed beside the kubernetes client the operator needs (python-dateutil>=3),
and a second environment in every image would cost more than these few hundred
lines. Credentials are keys from the environment or a web identity (IRSA);
what that leaves out of boto3's chain: EKS Pod Identity, instance profiles,
~/.aws files.

Objects map to the local layout one to one: the file `<dir>/<rel>` is the key
`<PREFIX>/<dir>/<rel>`. Large arrays are streamed as a multipart upload: the
writer holds one part (16 MiB, doubled every 1000 parts so an array of any
size fits S3's 10,000-part limit) and sends it when full, so a save never
holds a second copy of an array; the object appears only when the upload is
completed, and an error aborts it. Reads stream the object body straight into
the destination array.
"""
from __future__ import annotations

import base64
import hashlib
import io
import posixpath
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psjob.foundation.checkpoint.backend import S3_SCHEME, BinaryFile, Storage, StorageError
from psjob.foundation.checkpoint.s3client import Client, Config, S3Error, error_of, parse, xml_find, xml_text
from psjob.foundation.settings import SettingsError, process_settings

PART_BYTES = 16 << 20  # S3's minimum part is 5 MiB (except the last)
PARTS_PER_SIZE = 1000  # double the part size every this many parts (S3 allows 10,000)
DELETE_BATCH = 1000    # DeleteObjects takes at most 1000 keys


class S3Storage(Storage):
    """Checkpoint storage on S3; one client per configuration (the AWS_* environment)."""

    local = False

    def __init__(self) -> None:
        self._clients: dict = {}
        self._lock = threading.Lock()

    @property
    def client(self) -> Client:
        # The AWS_* settings as they are now: a process may point them elsewhere between
        # saves (tests do); parsed and checked by psjob.foundation.settings.
        try:
            cfg = Config.of(process_settings().s3)
        except SettingsError as exc:
            raise StorageError(str(exc)) from None  # an OSError: "this checkpoint failed", as before
        with self._lock:
            client = self._clients.get(cfg)
            if client is None:
                client = self._clients[cfg] = Client(cfg)
            return client

    @contextmanager
    def open_write(self, path: str) -> Iterator[BinaryFile]:
        parse(path)
        upload = _Upload(self.client, path)
        try:
            yield upload
            upload.commit()
        except BaseException:
            upload.abort()
            raise

    def open_read(self, path: str) -> BinaryFile:
        resp, conn = self.client.request("GET", path, stream=True)
        return _Download(resp, conn)

    def open_seekable(self, path: str) -> BinaryFile:
        return io.BytesIO(self.read_bytes(path))

    def read_bytes(self, path: str) -> bytes:
        return self.client.request("GET", path)[2]

    def exists(self, path: str) -> bool:
        try:
            self.client.request("HEAD", path)
        except FileNotFoundError:
            return False
        return True

    def _pages(self, dirpath: str, delimiter: str = "") -> Iterator[tuple[str, ET.Element]]:
        """ListObjectsV2 pages under `dirpath/`: (prefix, parsed XML root)."""
        bucket, key = parse(dirpath)
        prefix = f"{key}/" if key else ""
        query = {"list-type": "2", "prefix": prefix}
        if delimiter:
            query["delimiter"] = delimiter
        bucket_uri = f"{S3_SCHEME}{bucket}"
        while True:
            root = ET.fromstring(self.client.request("GET", bucket_uri, query)[2])
            yield prefix, root
            token = xml_text(root, "NextContinuationToken")
            if xml_text(root, "IsTruncated") != "true" or not token:
                return
            query["continuation-token"] = token

    def is_dir(self, path: str) -> bool:
        for _prefix, root in self._pages(path, "/"):
            if xml_find(root, "Contents") or xml_find(root, "CommonPrefixes"):
                return True
        return False

    def sizes(self, dirpath: str) -> dict[str, int]:
        out = {}
        for prefix, root in self._pages(dirpath):
            for obj in xml_find(root, "Contents"):
                out[xml_text(obj, "Key")[len(prefix):]] = int(xml_text(obj, "Size", "0"))
        return out

    def list_dirs(self, dirpath: str) -> list[str]:
        out = []
        for prefix, root in self._pages(dirpath, "/"):
            out += [xml_text(p, "Prefix")[len(prefix):].rstrip("/") for p in xml_find(root, "CommonPrefixes")]
        return out

    def remove(self, path: str) -> None:
        try:
            self.client.request("DELETE", path)  # deleting a missing key succeeds on S3
        except FileNotFoundError:
            pass

    def remove_tree(self, dirpath: str, first: str) -> None:
        self.remove(posixpath.join(dirpath, first))  # the manifest: no longer a checkpoint from here on
        bucket, key = parse(dirpath)
        keys = [f"{key}/{rel}" if key else rel for rel in self.sizes(dirpath)]
        for start in range(0, len(keys), DELETE_BATCH):
            objects = "".join(f"<Object><Key>{_xml_escape(k)}</Key></Object>" for k in keys[start:start + DELETE_BATCH])
            body = f"<Delete><Quiet>true</Quiet>{objects}</Delete>".encode()
            md5 = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()
            reply = self.client.request("POST", f"{S3_SCHEME}{bucket}", {"delete": ""}, body,
                                        {"content-md5": md5, "content-type": "application/xml"})[2]
            errors = xml_find(ET.fromstring(reply), "Error") if reply else []
            if errors:
                raise S3Error(f"cannot delete {S3_SCHEME}{bucket}/{xml_text(errors[0], 'Key')}: "
                              f"{xml_text(errors[0], 'Code')} {xml_text(errors[0], 'Message')}".strip())


def _xml_escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _Upload(io.RawIOBase):
    """A write-only file that becomes one object: a single PUT when it stays under one part,
    else a multipart upload whose parts are sent as they fill. Holds one part in memory."""

    def __init__(self, client: Client, uri: str) -> None:
        super().__init__()
        self.client, self.uri = client, uri
        self._buf = bytearray()
        self._part_bytes = PART_BYTES
        self._etags: list[str] = []
        self._upload_id: str | None = None
        self._written = 0

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._written

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        self._written += n
        while view:
            room = self._part_bytes - len(self._buf)
            self._buf += view[:room]
            view = view[room:]
            if len(self._buf) >= self._part_bytes:
                self._send_part()
        return n

    def _send_part(self) -> None:
        if self._upload_id is None:
            reply = self.client.request("POST", self.uri, {"uploads": ""})[2]
            self._upload_id = xml_text(ET.fromstring(reply), "UploadId")
            if not self._upload_id:
                raise S3Error(f"{self.uri}: the store started no multipart upload (no UploadId)")
        number = len(self._etags) + 1
        _status, headers, _ = self.client.request(
            "PUT", self.uri, {"partNumber": number, "uploadId": self._upload_id}, self._buf)
        self._etags.append(headers.get("ETag", ""))
        self._buf.clear()
        if len(self._etags) % PARTS_PER_SIZE == 0:
            self._part_bytes *= 2

    def commit(self) -> None:
        if self._upload_id is None:
            self.client.request("PUT", self.uri, body=self._buf)
        else:
            if self._buf:
                self._send_part()
            parts = "".join(f"<Part><PartNumber>{i}</PartNumber><ETag>{_xml_escape(etag)}</ETag></Part>"
                            for i, etag in enumerate(self._etags, 1))
            body = f"<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>".encode()
            reply = self.client.request("POST", self.uri, {"uploadId": self._upload_id}, body,
                                        {"content-type": "application/xml"})[2]
            # CompleteMultipartUpload may fail after answering 200: the error is in the body.
            if reply and ET.fromstring(reply).tag.rsplit("}", 1)[-1] == "Error":
                code, msg = error_of(200, reply)
                raise S3Error(f"{self.uri}: completing the upload failed: {code} {msg}".strip(), code)
            self._upload_id = None
        self._buf = bytearray()

    def abort(self) -> None:
        """Drop an unfinished upload (its parts would otherwise be stored, and billed, until a
        lifecycle rule removes them); best effort: the object never appeared either way."""
        self._buf = bytearray()
        if self._upload_id is None:
            return
        upload_id, self._upload_id = self._upload_id, None
        try:
            self.client.request("DELETE", self.uri, {"uploadId": upload_id})
        except OSError:
            pass  # the original error is the one to report


class _Download(io.RawIOBase):
    """The streamed body of a GET: readinto fills the buffer fully unless the object ends."""

    def __init__(self, resp: Any, conn: Any) -> None:
        super().__init__()
        self._resp, self._conn = resp, conn

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        view = memoryview(buf).cast("B")
        got = 0
        while got < len(view):
            n = self._resp.readinto(view[got:])
            if not n:
                break
            got += n
        return got

    def close(self) -> None:
        if not self.closed:
            self._conn.close()
        super().close()


_STORAGE = S3Storage()


def storage() -> S3Storage:
    return _STORAGE
