"""The per-job RPC secret: read from PSJOB_AUTH_TOKEN_FILE, never logged."""
from __future__ import annotations

from psjob.foundation.role_env import process_environment


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
        raise AuthConfigError(f"PSJOB_AUTH_TOKEN_FILE {path}: cannot read the auth token: {exc.strerror}") from None
    if not token:
        raise AuthConfigError(f"PSJOB_AUTH_TOKEN_FILE {path} is empty")
    return token


def token_from_env(environ=None) -> str:
    env = process_environment() if environ is None else environ
    return read_token(env.get("PSJOB_AUTH_TOKEN_FILE", ""))
