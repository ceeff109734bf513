"""A throwaway CA and server certificate for the stand-in (the SDKs will not speak cleartext)."""

from __future__ import annotations

import ssl
from pathlib import Path

import trustme

CA_FILE_NAME = "ca.pem"


def server_tls_context(cert_dir: Path) -> tuple[ssl.SSLContext, Path]:
    """Make a fresh CA, write it as ``cert_dir/ca.pem``, and return a server context offering h2
    (the bidirectional stream) and http/1.1 (boto3's InvokeEndpoint routes) by ALPN.

    The server certificate names 127.0.0.1, ::1 and localhost, so clients verify it normally
    once they trust the CA file.
    """
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="bidi-tts gateway (test only)")
    server_cert = ca.issue_cert("127.0.0.1", "::1", "localhost")
    ca_path = cert_dir / CA_FILE_NAME
    ca.cert_pem.write_to_path(str(ca_path))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_cert.configure_cert(context)
    context.set_alpn_protocols(["h2", "http/1.1"])
    return context, ca_path
