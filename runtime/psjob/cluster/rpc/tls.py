"""Optional TLS for the trainer↔pserver RPC, from certificate files.

The files are the ones a Kubernetes TLS Secret mounts (tls.crt, tls.key,
ca.crt); their paths come from the environment:

    PSJOB_TLS_CERT_FILE    the pserver's certificate chain (PEM)       — pservers
    PSJOB_TLS_KEY_FILE     its private key (PEM)                       — pservers
    PSJOB_TLS_CA_FILE      the CA that signed it (PEM)                 — clients
    PSJOB_TLS_SERVER_NAME  name to check the certificate against instead of
                           the endpoint's host (one cert for every pserver)

TLS is on for a process as soon as any of the file variables is set; none set
means plaintext, as before. A pserver needs the certificate and key; a client
(trainer, checkpoint tool, a pserver asking its peers) needs the CA — without
it the system's trust roots are used. TLS only encrypts and proves the
pserver's identity: the per-job auth token (PSJOB_AUTH_TOKEN_FILE) still
authenticates every call on top of it. A plaintext client talking to a TLS
pserver (or the reverse) fails the handshake and sees UNAVAILABLE.

Files are read once, when a server starts or a client opens its first
channel; a rotated Secret takes effect at the next process start.
"""
from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Any

import grpc

# TlsFiles, TlsConfigError and the variables are the settings' (psjob.foundation.settings
# parses PSJOB_TLS_* into settings.rpc.tls); this module turns them into credentials.
from psjob.foundation.settings import TLS_CA_FILE as ENV_CA
from psjob.foundation.settings import TLS_CERT_FILE as ENV_CERT
from psjob.foundation.settings import TLS_KEY_FILE as ENV_KEY
from psjob.foundation.settings import TLS_SERVER_NAME as ENV_SERVER_NAME  # noqa: F401
from psjob.foundation.settings import TlsConfigError, TlsFiles  # noqa: F401


def _read(path: str, variable: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise TlsConfigError(f"{variable} {path}: cannot read it: {exc.strerror}") from None
    if b"-----BEGIN" not in data:
        raise TlsConfigError(f"{variable} {path}: not a PEM file (no -----BEGIN line)")
    return data


def server_credentials(files: TlsFiles) -> grpc.ServerCredentials:
    """Credentials for a pserver: its certificate and key (clients are not asked for certificates)."""
    if not (files.cert_file and files.key_file):
        raise TlsConfigError(f"TLS is configured but a pserver needs {ENV_CERT} and {ENV_KEY} to serve it")
    key, chain = _read(files.key_file, ENV_KEY), _read(files.cert_file, ENV_CERT)
    return grpc.ssl_server_credentials([(key, chain)])


def channel_credentials(files: TlsFiles) -> grpc.ChannelCredentials:
    """Credentials for a client: trust the job's CA (or the system roots when none is given)."""
    roots = _read(files.ca_file, ENV_CA) if files.ca_file else None
    return grpc.ssl_channel_credentials(root_certificates=roots)


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """The same certificate and key for the pserver's data plane (psjob.cluster.rpc.dataplane)."""
    if not (files.cert_file and files.key_file):
        raise TlsConfigError(f"TLS is configured but a pserver needs {ENV_CERT} and {ENV_KEY} to serve it")
    _read(files.key_file, ENV_KEY), _read(files.cert_file, ENV_CERT)  # named errors first
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(files.cert_file, files.key_file)
    return context


def client_context(files: TlsFiles) -> ssl.SSLContext:
    """A data-plane client's context: the job's CA (or the system roots), names checked."""
    cadata = _read(files.ca_file, ENV_CA).decode() if files.ca_file else None
    context = ssl.create_default_context(cadata=cadata)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def open_channel(endpoint: str, options: Sequence[tuple[str, Any]], files: TlsFiles | None) -> grpc.Channel:
    """A channel to `endpoint`: TLS when `files` is set, plaintext otherwise."""
    if files is None:
        return grpc.insecure_channel(endpoint, options=options)
    options = list(options)
    if files.server_name:
        options.append(("grpc.ssl_target_name_override", files.server_name))
    return grpc.secure_channel(endpoint, channel_credentials(files), options=options)


def add_port(server: grpc.Server, address: str, files: TlsFiles | None) -> int:
    """Bind `address` on `server`, with TLS when `files` is set; returns the port (0 = failed)."""
    if files is None:
        return server.add_insecure_port(address)
    return server.add_secure_port(address, server_credentials(files))
