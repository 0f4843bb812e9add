"""A small S3 client: the standard AWS configuration, Signature Version 4, HTTP.

Standard library only (http.client, hmac, hashlib). It knows the calls the
checkpoint store (s3.py) makes and no more: requests to `s3://bucket/key`
URIs, signed with SigV4 and `UNSIGNED-PAYLOAD` (the manifest's sha256 of every
array already checks the data end to end, so the body is not hashed twice),
over one keep-alive connection per thread and host, retried with backoff on a
dropped connection, 500 or 503. Errors become FileNotFoundError (no such key)
or `S3Error` naming the bucket, the credentials or the endpoint.

Configuration, from the environment as every AWS tool reads it:

    AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL   a store that is not AWS (MinIO, Ceph RGW, R2,
                                              GCS interoperability, ...): http(s)://host[:port];
                                              buckets are then addressed by path
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY  the keys (AWS_SESSION_TOKEN for temporary ones)
    AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE without keys: assume the role with the pod's
                                              service-account token (EKS IRSA sets both), through
                                              STS AssumeRoleWithWebIdentity (AWS_ENDPOINT_URL_STS,
                                              AWS_ROLE_SESSION_NAME); renewed 5 minutes before expiry
    AWS_REGION or AWS_DEFAULT_REGION          the signing region (default us-east-1)
    AWS_CA_BUNDLE                             a CA file for an endpoint with a private CA
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import http.client
import posixpath
import re
import ssl
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from psjob.foundation.checkpoint.backend import S3_SCHEME, StorageError
from psjob.foundation.settings import S3Settings

TIMEOUT_S = 60.0       # per socket operation
ATTEMPTS = 5           # tries of one request on a dropped connection, 500, 503 SlowDown
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
UNSIGNED = "UNSIGNED-PAYLOAD"
REGION_CODES = {"PermanentRedirect", "AuthorizationHeaderMalformed"}  # AWS: signed for the wrong region
KEYS_RENEW_BEFORE_S = 300  # assumed-role keys are renewed this long before they expire
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
class Keys:
    access_key: str
    secret_key: str
    session_token: str = ""
    expires: float = float("inf")  # time.time() after which they are no longer valid


@dataclass(frozen=True)
class Config:
    endpoint: str          # "" for AWS itself
    region: str
    access_key: str
    secret_key: str
    session_token: str
    ca_bundle: str
    role_arn: str = ""                 # with web_identity_token_file: IRSA
    web_identity_token_file: str = ""
    sts_endpoint: str = ""
    role_session_name: str = ""

    @classmethod
    def of(cls, settings: S3Settings) -> Config:
        """The client's configuration from a process's S3 settings (the AWS_* variables,
        parsed and checked by psjob.foundation.settings)."""
        return cls(**dataclasses.asdict(settings))

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


def sign(keys: Keys, region: str, method: str, host: str, path: str, query: dict, headers: dict,
         now: dt.datetime, payload_hash: str = UNSIGNED) -> dict:
    """Headers of a SigV4-signed S3 request (AWS's "Signature Version 4" algorithm)."""
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    headers = {**{k.lower(): str(v).strip() for k, v in headers.items()}, "host": host,
               "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash}
    if keys.session_token:
        headers["x-amz-security-token"] = keys.session_token
    names = sorted(headers)
    canonical = "\n".join([
        method, _quote(path, safe="/-_.~"),
        "&".join(f"{_quote(k)}={_quote(v)}" for k, v in sorted(query.items())),
        "".join(f"{n}:{headers[n]}\n" for n in names), ";".join(names), payload_hash])
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{keys.secret_key}".encode(), day), region), "s3"), "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={keys.access_key}/{scope}, "
                                f"SignedHeaders={';'.join(names)}, Signature={signature}")
    return headers


# -- the client ------------------------------------------------------------------------------

class S3Error(StorageError):
    def __init__(self, message: str, code: str = "", status: int = 0) -> None:
        super().__init__(message)
        self.code, self.status = code, status


def error_of(status: int, body: bytes) -> tuple[str, str]:
    """(code, message) of an S3 error response (HEAD ones have no body)."""
    try:
        root = ET.fromstring(body) if body else None
    except ET.ParseError:
        root = None
    if root is not None:
        return root.findtext("Code") or str(status), root.findtext("Message") or ""
    return {404: "NotFound", 403: "AccessDenied", 400: "BadRequest"}.get(status, str(status)), ""


def xml_find(root: ET.Element, tag: str) -> list[ET.Element]:
    """Elements named `tag` at any depth, whatever the S3 namespace."""
    return [el for el in root.iter() if el.tag.rsplit("}", 1)[-1] == tag]


def xml_text(el: ET.Element, tag: str, default: str = "") -> str:
    for child in el:
        if child.tag.rsplit("}", 1)[-1] == tag:
            return child.text or ""
    return default


class Client:
    """S3 requests over one keep-alive connection per thread and host."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self._local = threading.local()
        self._ssl = ssl.create_default_context(cafile=cfg.ca_bundle or None)
        self._keys: Keys | None = None
        self._keys_lock = threading.Lock()

    def keys(self, uri: str) -> Keys:
        """The keys to sign with: static ones, or the web identity's, assumed and renewed."""
        cfg = self.cfg
        if cfg.access_key and cfg.secret_key:
            return Keys(cfg.access_key, cfg.secret_key, cfg.session_token)
        if not (cfg.role_arn and cfg.web_identity_token_file):
            raise StorageError(f"cannot reach {uri}: no S3 credentials: set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY (on Kubernetes: spec.checkpoint.credentialsSecret), or "
                               "AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE (IRSA)")
        with self._keys_lock:
            if self._keys is None or time.time() > self._keys.expires - KEYS_RENEW_BEFORE_S:
                self._keys = self._assume_role_with_web_identity()
            return self._keys

    def _assume_role_with_web_identity(self) -> Keys:
        """STS AssumeRoleWithWebIdentity (an unsigned call: the token is the proof)."""
        cfg = self.cfg
        try:
            with open(cfg.web_identity_token_file) as f:
                token = f.read().strip()
        except OSError as exc:
            raise StorageError(f"cannot read the web identity token AWS_WEB_IDENTITY_TOKEN_FILE="
                               f"{cfg.web_identity_token_file}: {exc.strerror or exc}") from exc
        body = urllib.parse.urlencode({"Action": "AssumeRoleWithWebIdentity", "Version": "2011-06-15",
                                       "RoleArn": cfg.role_arn, "RoleSessionName": cfg.role_session_name,
                                       "WebIdentityToken": token}).encode()
        u = urllib.parse.urlsplit(cfg.sts_endpoint)
        conn = self._connect(u.scheme, u.netloc)
        try:
            conn.request("POST", u.path or "/", body=body,
                         headers={"content-type": "application/x-www-form-urlencoded"})
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise StorageError(f"cannot reach STS at {cfg.sts_endpoint} to assume {cfg.role_arn}: {exc}") from exc
        finally:
            conn.close()
        root = ET.fromstring(data) if data else None
        creds = xml_find(root, "Credentials") if root is not None else []
        if resp.status != 200 or not creds:
            code, msg = error_of(resp.status, data)
            raise StorageError(f"cannot assume {cfg.role_arn} with the web identity token: {code} {msg}".strip())
        c = creds[0]
        expiry = xml_text(c, "Expiration")
        try:
            expires = dt.datetime.fromisoformat(expiry.replace("Z", "+00:00")).timestamp()
        except ValueError:
            expires = time.time() + KEYS_RENEW_BEFORE_S * 2  # unknown: renew soon
        return Keys(xml_text(c, "AccessKeyId"), xml_text(c, "SecretAccessKey"), xml_text(c, "SessionToken"),
                    expires)

    def _connect(self, scheme: str, host: str) -> http.client.HTTPConnection:
        if scheme == "https":
            return http.client.HTTPSConnection(host, timeout=TIMEOUT_S, context=self._ssl)
        return http.client.HTTPConnection(host, timeout=TIMEOUT_S)

    def _pooled(self, scheme: str, host: str) -> http.client.HTTPConnection:
        pool = self._local.__dict__.setdefault("pool", {})
        conn = pool.get((scheme, host))
        if conn is None:
            conn = pool[(scheme, host)] = self._connect(scheme, host)
        return conn

    def _drop(self, scheme: str, host: str) -> None:
        conn = self._local.__dict__.get("pool", {}).pop((scheme, host), None)
        if conn is not None:
            conn.close()

    def request(self, method: str, uri: str, query: dict | None = None, body: bytes | bytearray | memoryview = b"",
                headers: dict | None = None, stream: bool = False) -> Any:
        """(status, headers, body bytes) — or, with stream=True, the open response of a GET whose
        connection belongs to it (close it when done). Raises S3Error for an error status."""
        cfg = self.cfg
        bucket, key = parse(uri)
        keys = self.keys(uri)
        scheme, host, base = cfg.location(bucket)
        path = f"{base}/{key}" if key else (base or "/")
        query = {k: str(v) for k, v in (query or {}).items()}
        target = _quote(path, safe="/-_.~") + ("?" + "&".join(
            f"{_quote(k)}={_quote(v)}" for k, v in sorted(query.items())) if query else "")
        last: StorageError = StorageError(f"{method} {uri}: no attempt made")
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(min(0.1 * 2 ** attempt, 2.0))  # backoff between retries of a failed call
            signed = sign(keys, cfg.region, method, host, path, query,
                          dict(headers or {}, **{"content-length": len(body)}), dt.datetime.now(dt.UTC))
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
                code, msg = error_of(resp.status, data)
                last = S3Error(f"{method} {uri}: {code} {msg}".strip(), code, resp.status)
                continue
            if resp.status >= 300:
                raise self._failure(method, uri, resp.status, data)
            return resp.status, resp.headers, data
        raise last

    def _failure(self, method: str, uri: str, status: int, body: bytes) -> OSError:
        code, msg = error_of(status, body)
        bucket = parse(uri)[0]
        where = self.cfg.where()
        if code == "NoSuchBucket":
            return S3Error(f"{uri}: bucket {bucket!r} does not exist{where}", code, status)
        if code in ("NoSuchKey", "NotFound"):
            return FileNotFoundError(2, f"no such object: {uri}", uri)
        if code in REGION_CODES:
            return S3Error(f"{method} {uri}: {code}: the bucket lives in another region than "
                           f"{self.cfg.region}: set AWS_REGION to the bucket's region", code, status)
        if code in CREDENTIAL_CODES:
            return S3Error(f"{method} {uri}: access denied{where} ({code}{': ' + msg if msg else ''}): check "
                           "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket's policy", code, status)
        return S3Error(f"{method} {uri}: {code}{': ' + msg if msg else ''}", code, status)
