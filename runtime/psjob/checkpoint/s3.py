"""Checkpoints on S3-compatible object storage: `s3://BUCKET/PREFIX`.

Configured the standard AWS way, from the environment:

    AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL   a store that is not AWS (MinIO, Ceph RGW, R2,
                                              GCS interoperability, ...): http(s)://host[:port]
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY  the keys (AWS_SESSION_TOKEN for temporary ones)
    AWS_REGION or AWS_DEFAULT_REGION          the signing region (default us-east-1)
    AWS_CA_BUNDLE                             a CA file for an endpoint with a private CA

The client is our own and small (standard library only: http.client, hmac,
hashlib): Signature Version 4 with `UNSIGNED-PAYLOAD` (the manifest's sha256
of every array already checks the data end to end, so the upload need not be
hashed twice) and the eight calls checkpoints need. Not boto3: botocore pins
python-dateutil<3, which cannot be installed beside the kubernetes client the
operator needs (python-dateutil>=3), and a second SDK environment in every
image would cost more than these few hundred lines. What this leaves out:
credentials that boto3 would find on its own (web identity / IRSA, EKS Pod
Identity, instance profiles, ~/.aws files) — give the pods keys from a Secret.

With a custom endpoint buckets are addressed by path (`http://host/bucket/key`),
which every S3-compatible store accepts; on AWS by virtual host
(`https://bucket.s3.REGION.amazonaws.com/key`).

Objects map to the local layout one to one: the file `<dir>/<rel>` is the key
`<PREFIX>/<dir>/<rel>`. Large arrays are streamed as a multipart upload: the
writer holds one part (16 MiB, doubled every 1000 parts so an array of any
size fits S3's 10,000-part limit) and sends it when full, so a save never
holds a second copy of an array; the object appears only when the upload is
completed, and an error aborts it. Reads stream the object body.
"""
from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import http.client
import io
import os
import posixpath
import re
import ssl
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from contextlib import contextmanager
from dataclasses import dataclass

from .storage import S3_SCHEME, Storage, StorageError

PART_BYTES = 16 << 20  # S3's minimum part is 5 MiB (except the last)
PARTS_PER_SIZE = 1000  # double the part size every this many parts (S3 allows 10,000)
DELETE_BATCH = 1000    # DeleteObjects takes at most 1000 keys
TIMEOUT_S = 60.0       # per socket operation
ATTEMPTS = 5           # tries of one request on a dropped connection, 500, 503 SlowDown
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
UNSIGNED = "UNSIGNED-PAYLOAD"
CREDENTIAL_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken",
                    "InvalidToken"}


def parse(uri: str) -> tuple[str, str]:
    """(bucket, key) of `s3://bucket/key`; StorageError naming what is wrong otherwise."""
    if not uri.startswith(S3_SCHEME):
        raise StorageError(f"{uri!r} is not an s3:// URI")
    bucket, _, key = uri[len(S3_SCHEME):].partition("/")
    if not bucket:
        raise StorageError(f"checkpoint store {uri!r} names no bucket: use s3://BUCKET/PREFIX")
    if not BUCKET_RE.match(bucket) or ".." in bucket:
        raise StorageError(f"checkpoint store {uri!r}: {bucket!r} is not a valid bucket name (3 to 63 "
                           "lowercase letters, digits, dots and hyphens)")
    key = posixpath.normpath(key).lstrip("/") if key.strip("/") else ""
    if key in (".", "..") or key.startswith("../"):
        raise StorageError(f"checkpoint store {uri!r}: the prefix must not climb out with '..'")
    return bucket, key


# -- configuration and signing ------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    endpoint: str          # "" for AWS itself
    region: str
    access_key: str
    secret_key: str
    session_token: str
    ca_bundle: str

    @classmethod
    def from_env(cls, env=None) -> "Config":
        env = os.environ if env is None else env
        endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").rstrip("/")
        if endpoint and urllib.parse.urlsplit(endpoint).scheme not in ("http", "https"):
            raise StorageError(f"AWS_ENDPOINT_URL={endpoint!r} is not an http:// or https:// URL")
        return cls(endpoint=endpoint,
                   region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
                   access_key=env.get("AWS_ACCESS_KEY_ID", ""), secret_key=env.get("AWS_SECRET_ACCESS_KEY", ""),
                   session_token=env.get("AWS_SESSION_TOKEN", ""), ca_bundle=env.get("AWS_CA_BUNDLE", ""))

    def where(self) -> str:
        return f" at {self.endpoint}" if self.endpoint else ""

    def location(self, bucket: str) -> tuple[str, str, str]:
        """(scheme, host[:port], path prefix) that addresses `bucket`."""
        if self.endpoint:
            u = urllib.parse.urlsplit(self.endpoint)
            return u.scheme, u.netloc, f"/{bucket}"
        if "." in bucket:  # a dotted name breaks the wildcard certificate of virtual hosts
            return "https", f"s3.{self.region}.amazonaws.com", f"/{bucket}"
        return "https", f"{bucket}.s3.{self.region}.amazonaws.com", ""


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _quote(s: str, safe: str = "-_.~") -> str:
    return urllib.parse.quote(s, safe=safe)


def sign(cfg: Config, method: str, host: str, path: str, query: dict, headers: dict,
         now: dt.datetime) -> dict:
    """Headers of a SigV4-signed S3 request (AWS's "Signature Version 4" algorithm)."""
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    headers = {**{k.lower(): str(v).strip() for k, v in headers.items()}, "host": host,
               "x-amz-date": amz_date, "x-amz-content-sha256": UNSIGNED}
    if cfg.session_token:
        headers["x-amz-security-token"] = cfg.session_token
    names = sorted(headers)
    canonical = "\n".join([
        method, _quote(path, safe="/-_.~"),
        "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(query.items())),
        "".join(f"{n}:{headers[n]}\n" for n in names), ";".join(names), UNSIGNED])
    scope = f"{day}/{cfg.region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{cfg.secret_key}".encode(), day), cfg.region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={cfg.access_key}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return headers


# -- the client ------------------------------------------------------------------------------

class S3Error(StorageError):
    def __init__(self, message: str, code: str = "", status: int = 0):
        super().__init__(message)
        self.code, self.status = code, status


def _error_of(status: int, body: bytes) -> tuple[str, str]:
    """(code, message) of an S3 error response (HEAD ones have no body)."""
    try:
        root = ET.fromstring(body) if body else None
    except ET.ParseError:
        root = None
    if root is not None:
        return root.findtext("Code") or str(status), root.findtext("Message") or ""
    return {404: "NotFound", 403: "AccessDenied", 400: "BadRequest"}.get(status, str(status)), ""


def _xml_find(root, tag):
    """Elements named `tag` at any depth, whatever the S3 namespace."""
    return [el for el in root.iter() if el.tag.rsplit("}", 1)[-1] == tag]


def _xml_text(el, tag, default=""):
    for child in el:
        if child.tag.rsplit("}", 1)[-1] == tag:
            return child.text or ""
    return default


class Client:
    """S3 requests over one keep-alive connection per thread and host."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self._local = threading.local()
        self._ssl = ssl.create_default_context(cafile=cfg.ca_bundle or None)

    def _connect(self, scheme: str, host: str):
        if scheme == "https":
            return http.client.HTTPSConnection(host, timeout=TIMEOUT_S, context=self._ssl)
        return http.client.HTTPConnection(host, timeout=TIMEOUT_S)

    def _pooled(self, scheme: str, host: str):
        pool = self._local.__dict__.setdefault("pool", {})
        conn = pool.get((scheme, host))
        if conn is None:
            conn = pool[(scheme, host)] = self._connect(scheme, host)
        return conn

    def _drop(self, scheme: str, host: str):
        conn = self._local.__dict__.get("pool", {}).pop((scheme, host), None)
        if conn is not None:
            conn.close()

    def request(self, method: str, uri: str, query: dict | None = None, body=b"", headers: dict | None = None,
                stream: bool = False):
        """(status, headers, body bytes) — or, with stream=True, the open response of a GET whose
        connection belongs to it (close it when done). Raises S3Error for an error status."""
        cfg = self.cfg
        if not cfg.access_key or not cfg.secret_key:
            raise StorageError(f"cannot reach {uri}: no S3 credentials: set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY (on Kubernetes: spec.checkpoint.credentialsSecret)")
        bucket, key = parse(uri)
        scheme, host, base = cfg.location(bucket)
        path = f"{base}/{key}" if key else (base or "/")
        query = {k: str(v) for k, v in (query or {}).items()}
        target = _quote(path, safe="/-_.~") + ("?" + "&".join(
            f"{_quote(k)}={_quote(v)}" for k, v in sorted(query.items())) if query else "")
        last = None
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(min(0.1 * 2 ** attempt, 2.0))  # backoff between retries of a failed call
            signed = sign(cfg, method, host, path, query, dict(headers or {}, **{"content-length": len(body)}),
                          dt.datetime.now(dt.timezone.utc))
            conn = self._connect(scheme, host) if stream else self._pooled(scheme, host)
            try:
                conn.request(method, target, body=body, headers=signed)
                resp = conn.getresponse()
                if stream and resp.status == 200:
                    return resp, conn
                data = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if not stream:
                    self._drop(scheme, host)
                last = StorageError(f"cannot reach the S3 endpoint{cfg.where() or ' (AWS)'} for {uri}: {exc}")
                continue
            if stream:
                conn.close()
            if resp.status in (500, 502, 503, 504):
                code, msg = _error_of(resp.status, data)
                last = S3Error(f"{method} {uri}: {code} {msg}".strip(), code, resp.status)
                continue
            if resp.status >= 300:
                raise self._failure(method, uri, resp.status, data)
            return resp.status, resp.headers, data
        raise last

    def _failure(self, method: str, uri: str, status: int, body: bytes) -> OSError:
        code, msg = _error_of(status, body)
        bucket = parse(uri)[0]
        where = self.cfg.where()
        if code == "NoSuchBucket":
            return S3Error(f"{uri}: bucket {bucket!r} does not exist{where}", code, status)
        if code in ("NoSuchKey", "NotFound"):
            return FileNotFoundError(2, f"no such object: {uri}", uri)
        if code in CREDENTIAL_CODES:
            return S3Error(f"{method} {uri}: access denied{where} ({code}{': ' + msg if msg else ''}): check "
                           "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket's policy", code, status)
        return S3Error(f"{method} {uri}: {code}{': ' + msg if msg else ''}", code, status)


# -- the store ---------------------------------------------------------------------------------

class S3Storage(Storage):
    """Checkpoint storage on S3; one client per configuration (the AWS_* environment)."""

    local = False

    def __init__(self):
        self._clients: dict = {}
        self._lock = threading.Lock()

    @property
    def client(self) -> Client:
        cfg = Config.from_env()
        with self._lock:
            client = self._clients.get(cfg)
            if client is None:
                client = self._clients[cfg] = Client(cfg)
            return client

    @contextmanager
    def open_write(self, path: str):
        parse(path)
        upload = _Upload(self.client, path)
        try:
            yield upload
            upload.commit()
        except BaseException:
            upload.abort()
            raise

    def open_read(self, path: str):
        resp, conn = self.client.request("GET", path, stream=True)
        return _Download(resp, conn)

    def open_seekable(self, path: str):
        return io.BytesIO(self.read_bytes(path))

    def read_bytes(self, path: str) -> bytes:
        return self.client.request("GET", path)[2]

    def exists(self, path: str) -> bool:
        try:
            self.client.request("HEAD", path)
        except FileNotFoundError:
            return False
        return True

    def _pages(self, dirpath: str, delimiter: str = ""):
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
            token = _xml_text(root, "NextContinuationToken")
            if _xml_text(root, "IsTruncated") != "true" or not token:
                return
            query["continuation-token"] = token

    def is_dir(self, path: str) -> bool:
        for _prefix, root in self._pages(path, "/"):
            if _xml_find(root, "Contents") or _xml_find(root, "CommonPrefixes"):
                return True
        return False

    def sizes(self, dirpath: str) -> dict[str, int]:
        out = {}
        for prefix, root in self._pages(dirpath):
            for obj in _xml_find(root, "Contents"):
                out[_xml_text(obj, "Key")[len(prefix):]] = int(_xml_text(obj, "Size", "0"))
        return out

    def list_dirs(self, dirpath: str) -> list[str]:
        out = []
        for prefix, root in self._pages(dirpath, "/"):
            out += [_xml_text(p, "Prefix")[len(prefix):].rstrip("/") for p in _xml_find(root, "CommonPrefixes")]
        return out

    def remove(self, path: str) -> None:
        try:
            self.client.request("DELETE", path)  # deleting a missing key succeeds on S3
        except FileNotFoundError:
            pass

    def remove_tree(self, dirpath: str) -> None:
        from .format import MANIFEST
        self.remove(posixpath.join(dirpath, MANIFEST))  # no longer a checkpoint, from here on
        bucket, key = parse(dirpath)
        keys = [f"{key}/{rel}" if key else rel for rel in self.sizes(dirpath)]
        for start in range(0, len(keys), DELETE_BATCH):
            objects = "".join(f"<Object><Key>{_xml_escape(k)}</Key></Object>" for k in keys[start:start + DELETE_BATCH])
            body = f"<Delete><Quiet>true</Quiet>{objects}</Delete>".encode()
            md5 = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()
            reply = self.client.request("POST", f"{S3_SCHEME}{bucket}", {"delete": ""}, body,
                                        {"content-md5": md5, "content-type": "application/xml"})[2]
            errors = _xml_find(ET.fromstring(reply), "Error") if reply else []
            if errors:
                raise S3Error(f"cannot delete {S3_SCHEME}{bucket}/{_xml_text(errors[0], 'Key')}: "
                              f"{_xml_text(errors[0], 'Code')} {_xml_text(errors[0], 'Message')}".strip())


def _xml_escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class _Upload(io.RawIOBase):
    """A write-only file that becomes one object: a single PUT when it stays under one part,
    else a multipart upload whose parts are sent as they fill. Holds one part in memory."""

    def __init__(self, client: Client, uri: str):
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

    def write(self, data) -> int:
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
            self._upload_id = _xml_text(ET.fromstring(reply), "UploadId")
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
                code, msg = _error_of(200, reply)
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

    def __init__(self, resp, conn):
        super().__init__()
        self._resp, self._conn = resp, conn

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
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
