"""The per-job RPC secret: read from PSJOB_AUTH_TOKEN_FILE, never logged."""
from __future__ import annotations

from psjob.foundation.settings import AUTH_TOKEN_FILE, Settings


class AuthConfigError(RuntimeError):
    pass


def read_token(path: str) -> str:
    """The token in `path`, or "" when no path is configured (auth disabled)."""
    if not path:
        return ""
    try:
        with open(path) as f:
            token = f.read().strip()
    except OSError as exc:
        raise AuthConfigError(f"{AUTH_TOKEN_FILE} {path}: cannot read the auth token: {exc.strerror}") from None
    if not token:
        raise AuthConfigError(f"{AUTH_TOKEN_FILE} {path} is empty")
    return token


def job_token(settings: Settings) -> str:
    """The job's token named by the process's settings (PSJOB_AUTH_TOKEN_FILE; "" = auth off),
    read from its file now: a rotated Secret takes effect at the next client or server."""
    return read_token(settings.rpc.auth_token_file)
